//! The file workloads as applications (study `apps-files`): every row
//! holds or has its reason, and the row count.

mod support;

#[test]
fn apps_files_study_reproduces() {
    let (r, _) = support::reproduce("apps-files");
    assert_eq!(r.rows.len(), 15, "rows: {:#?}", r.rows.len());
}
