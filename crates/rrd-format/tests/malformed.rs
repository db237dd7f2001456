//! Malformed files: every truncation and every flipped header byte of a
//! valid file is either refused with an error or decodes to a header that
//! re-encodes to the same bytes. Never a panic, never a huge allocation.

use proptest::prelude::*;
use rrd_format::*;

/// The parts of a valid 2-DS, 3-RRA header (no rrdtool needed).
fn sample_parts() -> HeaderParts {
    let ds = |name: &str, dst: Dst| DsDef {
        name: Name::new(name),
        dst_name: Name::new(dst.name()),
        dst,
        par: [600, f64::NAN.to_bits(), f64::NAN.to_bits(), 0, 0, 0, 0, 0, 0, 0],
    };
    let rra = |cf: Cf, pdp: u64, rows: u64| RraDef {
        cf_name: Name::new(cf.name()),
        cf,
        pad: [0; 4],
        row_count: rows,
        pdp_count: pdp,
        par: [0.5f64.to_bits(), 0, 0, 0, 0, 0, 0, 0, 0, 0],
    };
    let mut pdp = PdpPrep { last_ds: [0; LAST_DS_LEN], pad: [0; 2], scratch: [0; 10] };
    pdp.set_last_ds("U");
    HeaderParts {
        version: Version(3),
        stat_pad: [0; 7],
        pdp_step: 300,
        stat_par: [0; 10],
        ds: vec![ds("in", Dst::Gauge), ds("out", Dst::Counter)],
        rra: vec![rra(Cf::Average, 1, 10), rra(Cf::Maximum, 6, 5), rra(Cf::Last, 24, 3)],
        live: LiveHead { last_up: 1_000_000_000, last_up_usec: 0 },
        pdp: vec![pdp.clone(), pdp],
        cdp: vec![CdpPrep { scratch: [0; 10] }; 6],
        rra_ptr: vec![3, 0, 2],
    }
}

/// A valid file with [`sample_parts`]'s header and zero rows.
fn sample_file() -> Vec<u8> {
    let header = Header::from_parts(sample_parts()).expect("the sample is valid");
    let mut bytes = header.encode();
    let layout = header.layout();
    bytes.resize(layout.file_len as usize, 0);
    bytes
}

fn decode_all(bytes: &[u8]) -> Result<Header, FormatError> {
    Header::decode(bytes, bytes.len() as u64)
}

/// The checked constructor refuses each broken invariant, naming it, and
/// the parts of a decoded header come back unchanged.
#[test]
fn from_parts_refuses_every_broken_invariant() {
    type Breaker = fn(&mut HeaderParts);
    let breakers: Vec<(&str, Breaker)> = vec![
        ("no data source", |p| {
            p.ds.clear();
            p.pdp.clear();
            p.cdp.clear();
        }),
        ("no archive", |p| {
            p.rra.clear();
            p.cdp.clear();
            p.rra_ptr.clear();
        }),
        ("pdp_step is zero", |p| p.pdp_step = 0),
        ("not NUL-terminated", |p| p.ds[1].name = Name([b'x'; 20])),
        ("type 'GAUGE' is not Counter", |p| p.ds[0].dst = Dst::Counter),
        ("cf 'MAX' is not Average", |p| p.rra[1].cf = Cf::Average),
        ("rra[2] row_cnt is zero", |p| p.rra[2].row_count = 0),
        ("rra[0] pdp_cnt is zero", |p| p.rra[0].pdp_count = 0),
        ("1 PDP scratch areas for 2 data sources", |p| {
            p.pdp.pop();
        }),
        ("7 CDP scratch areas", |p| p.cdp.push(CdpPrep { scratch: [0; 10] })),
        ("2 row pointers for 3 archives", |p| {
            p.rra_ptr.pop();
        }),
        ("rra[1] cur_row 5 is not below row_cnt 5", |p| p.rra_ptr[1] = 5),
        ("overflows", |p| p.rra[0].row_count = u64::MAX / 4),
    ];
    for (want, brk) in breakers {
        let mut parts = sample_parts();
        brk(&mut parts);
        let err = Header::from_parts(parts).expect_err(want).to_string();
        assert!(err.contains(want), "{want}: got '{err}'");
    }
    let bytes = sample_file();
    let h = decode_all(&bytes).unwrap();
    assert_eq!(h.clone().into_parts(), sample_parts());
    assert_eq!(Header::from_parts(h.clone().into_parts()).unwrap(), h);
}

/// The mutators keep the invariants: a row pointer wraps, a setter refuses a
/// row past the last, a rename refuses a name that does not fit, and a
/// version change that would move the live head is refused.
#[test]
fn mutators_cannot_break_the_header() {
    let mut h = Header::from_parts(sample_parts()).unwrap();
    assert_eq!(h.advance_row(2), 0, "rra[2] has 3 rows and was at row 2");
    assert_eq!(h.advance_row(0), 4);
    assert!(h.set_cur_row(1, 5).is_err());
    h.set_cur_row(1, 4).unwrap();
    assert_eq!(h.rra_ptr(), &[4, 4, 0]);
    assert!(h.rename_ds(0, "a_name_of_twenty_chr").is_err());
    h.rename_ds(0, "a_name_of_nineteen_").unwrap();
    assert_eq!(h.ds_index("a_name_of_nineteen_"), Some(0));
    h.set_ds_type(1, Dst::Derive);
    assert_eq!((h.ds()[1].dst, h.ds()[1].dst_name.as_str()), (Dst::Derive, "DERIVE"));
    assert!(h.set_version(Version(2)).is_err(), "0002 has an 8-byte live head");
    h.set_version(Version(5)).unwrap();
    let again = Header::decode(
        &{
            let mut b = h.encode();
            b.resize(h.layout().file_len as usize, 0);
            b
        },
        h.layout().file_len,
    )
    .unwrap();
    assert_eq!(again, h);
}

#[test]
fn the_sample_round_trips() {
    let bytes = sample_file();
    let h = decode_all(&bytes).unwrap();
    assert_eq!(h.encode(), bytes[..h.layout().data_off as usize]);
}

/// Truncating anywhere (including at every section boundary) is an error.
#[test]
fn every_truncation_is_refused() {
    let bytes = sample_file();
    for len in 0..bytes.len() {
        let err = decode_all(&bytes[..len]).expect_err("a truncated file must not decode");
        assert!(
            matches!(err, FormatError::Truncated { .. } | FormatError::LengthMismatch { .. }),
            "truncation to {len} gave {err}"
        );
    }
}

#[test]
fn specific_corruptions_name_the_cause() {
    let good = sample_file();
    let with = |off: usize, b: &[u8]| {
        let mut v = good.clone();
        v[off..off + b.len()].copy_from_slice(b);
        decode_all(&v).unwrap_err()
    };
    assert_eq!(with(0, b"XRD"), FormatError::BadCookie);
    assert_eq!(with(4, b"0009"), FormatError::UnsupportedVersion("0009".into()));
    assert_eq!(with(16, &[0; 8]), FormatError::FloatCookie);
    assert!(matches!(with(24, &0u64.to_le_bytes()), FormatError::Corrupt { offset: 24, .. }));
    assert!(matches!(with(24, &u64::MAX.to_le_bytes()), FormatError::Overflow { .. }));
    assert!(matches!(with(40, &0u64.to_le_bytes()), FormatError::Corrupt { offset: 40, .. }));
    // ds[0] name with no NUL in its 20 bytes.
    assert!(matches!(with(128, &[b'a'; 20]), FormatError::Corrupt { offset: 128, .. }));
    // rra[0] row_cnt of zero.
    let rra0 = 128 + 2 * 120;
    assert!(matches!(with(rra0 + 24, &0u64.to_le_bytes()), FormatError::Corrupt { .. }));
    // rra[0] cur_row beyond row_cnt.
    let h = decode_all(&good).unwrap();
    let ptr_off = h.layout().rra_ptr_off as usize;
    let err = with(ptr_off, &10u64.to_le_bytes());
    assert!(err.to_string().contains("cur_row 10"), "{err}");
}

/// Flipping any header byte either fails cleanly or yields a header that
/// re-encodes to exactly the flipped bytes.
#[test]
fn every_flipped_header_byte_is_handled() {
    let good = sample_file();
    let header_len = decode_all(&good).unwrap().layout().data_off as usize;
    for off in 0..header_len {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut v = good.clone();
            v[off] ^= mask;
            if let Ok(h) = decode_all(&v) {
                assert_eq!(h.encode(), v[..header_len], "flip at {off} with {mask:#x}");
            }
        }
    }
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096), claimed in any::<u64>()) {
        let _ = Header::decode(&bytes, claimed);
        let _ = StatHead::decode(&bytes);
    }

    #[test]
    fn random_counts_in_a_valid_prefix_never_panic(ds in any::<u64>(), rra in any::<u64>(), step in any::<u64>()) {
        let mut v = sample_file();
        v[24..32].copy_from_slice(&ds.to_le_bytes());
        v[32..40].copy_from_slice(&rra.to_le_bytes());
        v[40..48].copy_from_slice(&step.to_le_bytes());
        let len = v.len() as u64;
        let _ = Header::decode(&v, len);
    }
}
