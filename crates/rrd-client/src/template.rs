//! `update --template` through a daemon: the daemon takes values in the
//! file's DS order only, so the client reorders them first, filling the
//! DSes the template leaves out with `U` (librrd 1.7.2's
//! `rrd_map_template_to_values`, same checks in the same order, same texts).
//!
//! Kept from librrd: the DS list includes COMPUTE DSes (so a file with one
//! gets a value for it, which the daemon then refuses); fields are split on
//! every colon (`a::b` has three, an empty template none); only the part
//! after the time is counted, so `T@v` has no values.
//! Deliberately absent: reading the file (the caller passes its DS names).

/// Maps every value of `values` (`time:v1:v2...`, in template order) to
/// `time:...` in the order of `ds_names`. The error is rrdtool's message.
pub fn map_template(template: &str, ds_names: &[&str], values: &[String]) -> Result<Vec<String>, String> {
    let split = |s: &str| -> Vec<String> {
        if s.is_empty() {
            Vec::new()
        } else {
            s.split(':').map(String::from).collect()
        }
    };
    let wanted = split(template);
    let mut out = Vec::with_capacity(values.len());
    for value in values {
        let (time, rest) = match value.split_once(':') {
            Some((t, r)) => (t, Some(r)),
            None => (value.as_str(), None),
        };
        let given: Vec<String> = rest.map(|r| r.split(':').map(String::from).collect()).unwrap_or_default();
        if given.len() != wanted.len() {
            return Err(format!(
                "rrd_map_template_to_values: mismatch of number of fields in template ({}) with number of fields in values ({})",
                wanted.len(),
                given.len()
            ));
        }
        if wanted.len() > ds_names.len() {
            return Err(format!(
                "rrd_map_template_to_values: number of fields in template ({}) bigger than number of fields in rrdfile ({})",
                wanted.len(),
                ds_names.len()
            ));
        }
        // Which template field feeds each DS; a name used twice or unknown
        // is an error.
        let mut source: Vec<Option<usize>> = vec![None; ds_names.len()];
        for (i, name) in wanted.iter().enumerate() {
            match ds_names.iter().position(|d| d == name) {
                Some(d) if source[d].is_none() => source[d] = Some(i),
                _ => {
                    return Err(format!(
                        "rrd_map_template_to_values: there are fields in template ({template}) that are not in the rrdfile ({})",
                        ds_names.join(":")
                    ))
                }
            }
        }
        let mut mapped = time.to_string();
        for s in &source {
            mapped.push(':');
            mapped.push_str(s.map_or("U", |i| given[i].as_str()));
        }
        out.push(mapped);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    const DS: &[&str] = &["x", "y", "z"];

    #[test]
    fn reorders_and_fills_unknowns() {
        assert_eq!(map_template("y:x", DS, &v(&["100:1:2"])).unwrap(), ["100:2:1:U"]);
        assert_eq!(map_template("y", DS, &v(&["100:7", "N:8"])).unwrap(), ["100:U:7:U", "N:U:8:U"]);
        assert_eq!(map_template("x:y", DS, &v(&["100::"])).unwrap(), ["100:::U"]);
    }

    #[test]
    fn errors_come_in_rrdtools_order() {
        let e = |t: &str, vals: &[&str]| map_template(t, DS, &v(vals)).unwrap_err();
        assert_eq!(
            e("y:q", &["1:7"]),
            "rrd_map_template_to_values: mismatch of number of fields in template (2) with number of fields in values (1)"
        );
        assert_eq!(
            e("x:y:z:x", &["1:1:2:3:4"]),
            "rrd_map_template_to_values: number of fields in template (4) bigger than number of fields in rrdfile (3)"
        );
        assert_eq!(
            e("x:y:x", &["1:1:2:3"]),
            "rrd_map_template_to_values: there are fields in template (x:y:x) that are not in the rrdfile (x:y:z)"
        );
        assert_eq!(
            e("y::x", &["1:7:8"]),
            "rrd_map_template_to_values: mismatch of number of fields in template (3) with number of fields in values (2)"
        );
        assert!(e("", &["1:7"]).contains("template (0) with number of fields in values (1)"));
        assert!(e("x", &["1@5"]).contains("template (1) with number of fields in values (0)"));
        assert!(e("x", &["1:1", "2:1:2"]).contains("template (1) with number of fields in values (2)"));
    }
}
