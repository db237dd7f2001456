//! Fuzzes journal recovery with arbitrary damage to a valid segment. The
//! first byte picks the number of records and whether the segment is the
//! newest; every following 4 bytes are one hit (flip a byte, set a byte,
//! zero 8 bytes, write a huge length, cut the file). Recovery must not
//! panic, must return every record whose frame bytes were not touched, in
//! order, must account for every byte (header, returned frames, damaged
//! ranges in file order, torn tail), and may call only an end of the
//! newest segment a torn tail. (Records that are not intact may come back
//! only if the damage forged a frame with a valid checksum: that is a
//! valid frame, and the fuzzer can find such collisions, so it is not
//! checked here, and an intact record swallowed by such a forged frame is
//! a collision, not a bug; the unit tests check "nothing invented" on
//! random damage.)

use rrd_journal::{scan_segment, Record};

fn record(i: usize) -> Record {
    let args = if i % 5 == 2 {
        Vec::new() // a FORGET
    } else {
        (0..1 + i % 3).map(|k| format!("{}:{}:U", 1_000_000_000 + i * 7 + k, i * 31 + k)).collect()
    };
    Record { path: format!("/srv/rrd/host{}/load{i}.rrd", i % 4), args }
}

/// The target: one input.
pub fn run(data: &[u8]) {
    let Some((&first, hits)) = data.split_first() else { return };
    let n = 1 + (first & 0x3f) as usize;
    let newest = first & 0x80 != 0;
    let mut bytes = b"RRDSJNL1".to_vec();
    bytes.extend_from_slice(&1u64.to_le_bytes());
    let mut places = Vec::with_capacity(n);
    let records: Vec<Record> = (0..n).map(record).collect();
    for r in &records {
        let off = bytes.len();
        r.encode_frame(&mut bytes).unwrap();
        places.push((off, bytes.len() - off));
    }
    let clean = bytes.clone();
    for h in hits.chunks_exact(4) {
        if bytes.len() <= 16 {
            break;
        }
        let pos = 16 + u16::from_le_bytes([h[1], h[2]]) as usize % (bytes.len() - 16);
        match h[0] % 5 {
            0 => bytes[pos] ^= h[3] | 1,
            1 => bytes[pos] = h[3],
            2 => {
                let end = (pos + 8).min(bytes.len());
                bytes[pos..end].fill(0);
            }
            3 => {
                let (off, _) = places[h[3] as usize % n];
                if off + 4 <= bytes.len() {
                    let huge = 0xfff0_0000u32 | u32::from(h[1]);
                    bytes[off..off + 4].copy_from_slice(&huge.to_le_bytes());
                }
            }
            _ => bytes.truncate(pos),
        }
    }
    let scan = scan_segment(1, &bytes, newest);

    // Every untouched record comes back, in order.
    let intact: Vec<&Record> = (0..n)
        .filter(|&i| {
            let (off, len) = places[i];
            bytes.get(off..off + len) == Some(&clean[off..off + len])
        })
        .map(|i| &records[i])
        .collect();
    let mut returned = scan.records.iter();
    for r in &intact {
        assert!(returned.any(|x| x == *r), "intact record {r:?} lost or out of order");
    }
    // Every byte is accounted for, once.
    let mut frames = 0usize;
    for r in &scan.records {
        let mut f = Vec::new();
        r.encode_frame(&mut f).unwrap();
        frames += f.len();
    }
    let damaged: u64 = scan.damage.iter().map(|d| d.skipped_bytes).sum();
    let torn = scan.torn_tail.map_or(0, |(_, len)| len);
    let unused = scan.unused_tail.map_or(0, |(_, len)| len);
    assert!(scan.torn_tail.is_none() || scan.unused_tail.is_none(), "one tail at most");
    assert_eq!(16 + frames as u64 + damaged + torn + unused, bytes.len() as u64);
    let mut at = 16;
    for d in &scan.damage {
        assert!(d.offset >= at && d.offset + d.skipped_bytes <= bytes.len() as u64, "{d:?}");
        at = d.offset + d.skipped_bytes;
    }
    if let Some((off, len)) = scan.torn_tail.or(scan.unused_tail) {
        assert!(newest, "a torn or unused tail in an older segment");
        assert!(off >= at && off + len == bytes.len() as u64);
    }
}
