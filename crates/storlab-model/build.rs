// Embeds every preset in ../../presets into the library, so the binary
// works from any directory and a new preset file needs no code change.
use std::io::Write;

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../presets");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().and_then(|x| x.to_str()) == Some("toml"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    let out = std::path::Path::new(&std::env::var("OUT_DIR").unwrap()).join("presets_gen.rs");
    let mut f = std::fs::File::create(out).unwrap();
    writeln!(f, "/// Built-in presets: (name, TOML text).").unwrap();
    writeln!(f, "pub static BUILTIN: &[(&str, &str)] = &[").unwrap();
    for p in names {
        println!("cargo:rerun-if-changed={}", p.display());
        let stem = p.file_stem().unwrap().to_str().unwrap();
        let abs = p.canonicalize().unwrap();
        writeln!(
            f,
            "    ({stem:?}, include_str!({:?})),",
            abs.display().to_string()
        )
        .unwrap();
    }
    writeln!(f, "];").unwrap();
}
