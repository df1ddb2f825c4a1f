//! Bad configuration is an error naming the place, never a panic: arbitrary
//! preset files and `--set` overrides go through the whole loader.

use proptest::prelude::*;
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;

fn store_with(text: &str) -> PresetStore {
    PresetStore::default().with_text("x", text)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn arbitrary_preset_text_never_panics(text in ".{0,400}") {
        let store = store_with(&text);
        let _ = SystemConfig::load(&store, "x", &[]);
    }

    #[test]
    fn arbitrary_overrides_never_panic(key in "[a-z_.]{0,30}", value in ".{0,30}") {
        let o = format!("{key}={value}");
        if let Ok((_, cfg)) = SystemConfig::load(&PresetStore::default(), "moneta-spin", &[o]) {
            // whatever loads also builds
            let _ = cfg.build_device();
        }
    }

    #[test]
    fn mutated_real_presets_never_panic(idx in 0usize..8, cut in 0usize..4000, junk in "[=\\[\\]\"a-z0-9 .{},#\n]{0,20}") {
        let names = ["moneta-base", "moneta-2q", "haste-dram", "ddr-dram", "nvmm-opt", "null", "moneta-spin", "ddr-pcm"];
        let (_, text) = storlab_model::presets::BUILTIN.iter().find(|(n, _)| *n == names[idx]).expect("preset");
        let cut = cut.min(text.len());
        let cut = (0..=cut).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        let mutated = format!("{}{}{}", &text[..cut], junk, &text[cut..]);
        let store = store_with(&mutated);
        if let Ok((_, cfg)) = SystemConfig::load(&store, "x", &[]) {
            let _ = cfg.build_device();
        }
    }
}

#[test]
fn errors_name_the_key_and_file() {
    let store = store_with("extends = \"moneta-spin\"\n[pcie]\ncontrolers = 4\n");
    let e = SystemConfig::load(&store, "x", &[])
        .expect_err("unknown key refused")
        .to_string();
    assert!(
        e.contains("controlers") && e.contains("x.toml") && e.contains("[pcie]"),
        "{e}"
    );
    let e = SystemConfig::load(
        &PresetStore::default(),
        "moneta-spin",
        &["pcie.controllers=\"four\"".into()],
    )
    .expect_err("bad type")
    .to_string();
    assert!(e.contains("controllers") || e.contains("integer"), "{e}");
    let store = store_with("extends = \"x\"\n");
    assert!(
        SystemConfig::load(&store, "x", &[]).is_err(),
        "a cycle is an error"
    );
}

#[test]
fn presets_come_from_text_then_the_directory_then_built_in() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("null.toml"),
        "extends = \"moneta-spin\"\n[pcie]\ncontrolers = 4\n",
    )
    .expect("write");
    let from_dir = PresetStore::default().with_dir(dir.path());
    // the directory's file overrides the built-in preset, and its errors
    // name that file
    let e = SystemConfig::load(&from_dir, "null", &[])
        .expect_err("the directory's null.toml has an unknown key")
        .to_string();
    assert!(e.contains("null.toml") && e.contains("controlers"), "{e}");
    // text overrides both, and lists beside the built-in presets
    let from_text = from_dir.with_text("null", "extends = \"moneta-spin\"\n");
    let (resolved, _) = SystemConfig::load(&from_text, "null", &[])
        .expect("the text preset, not the directory's bad file, loads");
    assert_eq!(resolved.chain[..2], ["null", "moneta-spin"]);
    let names: Vec<String> = from_text
        .with_text("mine", "extends = \"null\"\n")
        .list()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert!(names.iter().any(|n| n == "mine") && names.iter().any(|n| n == "moneta-spin"));
}

#[test]
fn a_table_over_a_value_is_a_type_error_naming_the_key() {
    // found by the preset fuzz target: these used to panic
    for (store, overrides) in [
        (PresetStore::default(), vec!["pcie.tags.x=1".to_string()]),
        (
            store_with("extends = \"moneta-spin\"\n[pcie.tags]\nx = 1\n"),
            vec![],
        ),
    ] {
        let name = if overrides.is_empty() {
            "x"
        } else {
            "moneta-spin"
        };
        let e = SystemConfig::load(&store, name, &overrides)
            .expect_err("a table where a number belongs")
            .to_string();
        assert!(e.contains("pcie.tags") && e.contains("u32"), "{e}");
    }
    // and a value over a table replaces the table
    let e = SystemConfig::load(&PresetStore::default(), "moneta-spin", &["pcie=3".into()])
        .expect_err("a number where a table belongs")
        .to_string();
    assert!(e.contains("pcie"), "{e}");
}

#[test]
fn a_quoted_key_with_a_dot_is_refused_not_merged() {
    // `"pcie.tags" = 1` would flatten onto the nested key pcie.tags and
    // silently drop the other pcie keys
    for (text, line) in [
        ("extends = \"moneta-spin\"\n\"pcie.tags\" = 1\n", 2),
        ("extends = \"moneta-spin\"\n[pcie]\n'tags.x' = 1\n", 3),
        ("extends = \"moneta-spin\"\n\npcie = { \"a.b\" = 1 }\n", 3),
    ] {
        let e = SystemConfig::load(&store_with(text), "x", &[])
            .expect_err("a dotted quoted key")
            .to_string();
        assert!(
            e.contains(&format!("x.toml:{line}:")) && e.contains("holds a dot"),
            "{text}: {e}"
        );
    }
    // dotted (unquoted) keys are nested keys and still load
    SystemConfig::load(
        &store_with("extends = \"moneta-spin\"\npcie.tags = 16\n"),
        "x",
        &[],
    )
    .expect("a dotted key is a nested key");
}
