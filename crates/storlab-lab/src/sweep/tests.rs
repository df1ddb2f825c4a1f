//! Tests of sweeps (`super`).

use super::*;

#[test]
fn csv_lines_split_with_quotes() {
    assert_eq!(
        parse_csv_line("a,\"b,c\",\"d\"\"e\"").unwrap(),
        ["a", "b,c", "d\"e"]
    );
    assert_eq!(parse_csv_line("").unwrap(), [""]);
    assert!(parse_csv_line("\"open").is_err());
    assert!(parse_csv_line("a\"b").is_err());
    assert!(parse_csv_line("\"a\"b").is_err());
}

#[test]
fn points_enumerate_with_the_last_parameter_fastest() {
    let s = Sweep::new(
        Spec::new("null", &[], &["--name=a", "--rw=read"]),
        vec![
            Vary::parse("bs=4k,8k").unwrap(),
            Vary::parse("pcie.controllers=1,2,4").unwrap(),
        ],
    )
    .unwrap();
    assert_eq!(s.points(), 6);
    assert_eq!(s.values(0), ["4k", "1"]);
    assert_eq!(s.values(2), ["4k", "4"]);
    assert_eq!(s.values(3), ["8k", "1"]);
    let sp = s.spec(5);
    assert_eq!(sp.overrides, ["pcie.controllers=4"]);
    assert_eq!(sp.fio, ["--name=a", "--rw=read", "--bs=8k"]);
}

#[test]
fn fio_options_go_into_every_job() {
    let s = Sweep::new(
        Spec::new(
            "null",
            &[],
            &["--rw=read", "--name=a", "--bs=1k", "--name=b"],
        ),
        vec![Vary::parse("bs=64k").unwrap()],
    )
    .unwrap();
    assert_eq!(
        s.spec(0).fio,
        [
            "--rw=read",
            "--name=a",
            "--bs=1k",
            "--bs=64k",
            "--name=b",
            "--bs=64k"
        ]
    );
}

#[test]
fn bad_sweeps_are_refused_by_name() {
    for (arg, want) in [
        ("bs", "expected NAME=V1,V2"),
        ("=4k", "name is empty"),
        ("bs=4k,,8k", "an empty value"),
        ("bs=4k,4k", "'4k' given twice"),
    ] {
        let e = Vary::parse(arg).unwrap_err().to_string();
        assert!(e.contains(want) && e.contains(arg), "{arg}: {e}");
    }
    let base = Spec::new("null", &[], &["jobs/latency.fio"]);
    let e = Sweep::new(base, vec![Vary::parse("bs=4k").unwrap()]).unwrap_err();
    assert!(e.to_string().contains("job file jobs/latency.fio"), "{e}");
    let e = Sweep::new(Spec::new("null", &[], &["--name=a"]), vec![]).unwrap_err();
    assert!(e.to_string().contains("at least one --vary"), "{e}");
    for s in ["0/2", "3/2", "1", "a/b", "1/0"] {
        assert!(s.parse::<Shard>().is_err(), "{s}");
    }
    assert_eq!("2/3".parse::<Shard>().unwrap(), Shard { k: 2, n: 3 });
}
