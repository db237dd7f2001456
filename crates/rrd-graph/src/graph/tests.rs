//! The pipeline's own arithmetic against rrdtool's.

use super::grids::frexp10;
use super::paint::simplify;
use super::print::legacy_print_value;
use super::*;

#[test]
fn almost_equal_is_rrdtools_float_ulps() {
    assert!(almost_equal(50.0, 50.0, 4));
    assert!(almost_equal(1.0, 1.0 + 1e-9, 4));
    assert!(!almost_equal(1.0, 1.001, 4));
    assert!(!almost_equal(f64::NAN, 1.0, 4));
}

#[test]
fn legacy_print_averages_known_rows() {
    let s = SeriesData { start: 0, end: 40, step_secs: 10, values: vec![1.0, f64::NAN, 3.0, f64::INFINITY] };
    assert_eq!(legacy_print_value(&s, Cf::Average), 2.0);
    assert_eq!(legacy_print_value(&s, Cf::Maximum), 3.0);
    assert_eq!(legacy_print_value(&s, Cf::Last), 3.0);
    let none = SeriesData { start: 0, end: 10, step_secs: 10, values: vec![f64::NAN] };
    assert!(legacy_print_value(&none, Cf::Average).is_sign_negative());
}

#[test]
fn simplify_keeps_the_shape() {
    let steps = [(0.0, 1.0), (1.0, 1.0), (1.0, 1.0), (2.0, 1.0), (2.0, 3.0), (2.0, 5.0), (3.0, 5.0)];
    assert_eq!(simplify(&steps), vec![(0.0, 1.0), (2.0, 1.0), (2.0, 5.0), (3.0, 5.0)]);
    // A run that turns back is kept (it is not a straight line).
    let back = [(0.0, 0.0), (2.0, 0.0), (1.0, 0.0)];
    assert_eq!(simplify(&back), back.to_vec());
}

#[test]
fn titles_split_like_rrdtool() {
    assert_eq!(title_lines("a\\nb<br>c"), ["a", "b", "c"]);
    assert_eq!(title_lines("\\nx"), ["x"]);
    assert_eq!(title_lines("a\n\nb"), ["a", "b"]);
    assert_eq!(title_lines("a\n"), ["a", ""]);
    assert_eq!(title_lines("a<br/>b\nc\nd\ne"), ["a", "b", "c"]);
    assert_eq!(title_lines("plain"), ["plain"]);
    assert!(title_lines("").is_empty());
}

#[test]
fn frexp10_splits_decimal_exponents() {
    assert_eq!(frexp10(2500.0), (2.5, 3.0));
    let (m, e) = frexp10(0.05);
    assert!((m - 5.0).abs() < 1e-12 && e == -2.0);
}
