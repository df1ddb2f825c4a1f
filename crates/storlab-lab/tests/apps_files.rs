//! The file workloads as applications (study `apps-files`): every row
//! holds or has its reason, and the row count.

mod support;

#[test]
fn apps_files_study_reproduces() {
    let (r, _) = support::reproduce("apps-files");
    assert_eq!(r.rows.len(), 14);
    // the calibrated Table V row is an input and holds
    let build = r
        .rows
        .iter()
        .find(|x| x.what.starts_with("Table V: Build"))
        .expect("the Build row");
    assert!(build.pass && build.input.is_some());
}
