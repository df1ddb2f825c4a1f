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

/// The command line is the lab: `storlab sim --app postmark --device D`
/// (storlab_apps::simulate_app with no pairs of the user's) gives Table
/// V's run of the same device, the Moneta study's direct-IO rule
/// included: direct on Moneta, buffered on the SSD RAID. (A small run
/// here: the same `scale` pair on both sides.)
#[test]
fn postmark_on_the_command_line_is_table_v_s_run() {
    use storlab_lab::tablev;
    use storlab_model::config::PresetStore;
    use storlab_model::SystemConfig;
    let b = tablev::bench("Postmark").expect("Postmark in Table V");
    let pairs = vec!["scale=0.02".to_string()];
    let info = storlab_apps::find("postmark", "test").unwrap();
    for (dev, direct) in [("moneta-balance", true), ("raid-ssd", false)] {
        let spec = tablev::spec(b, dev, &pairs).expect("an application row");
        let lab = spec.run().unwrap();
        assert_eq!(
            lab.app["model"]["direct"].as_bool(),
            Some(direct),
            "{dev}: {}",
            lab.app
        );
        let (resolved, cfg) = SystemConfig::load(&PresetStore::default(), dev, &[]).unwrap();
        let cli =
            storlab_apps::simulate_app(&cfg, &resolved, info, &pairs, "test", spec.seed).unwrap();
        assert_eq!(cli, lab.app_metric(), "{dev}: the CLI and the lab differ");
        assert!(cli > 0.0);
    }
}
