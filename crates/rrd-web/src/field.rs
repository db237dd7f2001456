//! Text placed inside a field of a graph element (a DEF's path, a legend,
//! an XPORT label): rrdtool's element parser splits fields at `:` and
//! unescapes only `\:`, so a colon in the text is escaped and any other
//! backslash reaches the graph as it is. One place for the GrowthForecast
//! graphs, their vrules and the tree browser.

/// `s` with `:` escaped.
pub fn field(s: &str) -> String {
    s.replace(':', "\\:")
}

/// [`field`] for text that comes from outside (file and directory names,
/// labels from a definition file): backslashes and control characters are
/// dropped first, so no escape can be made of them.
pub fn untrusted_field(s: &str) -> String {
    field(&s.chars().filter(|c| *c != '\\' && !c.is_control()).collect::<String>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colons_are_escaped_and_outside_text_loses_its_escapes() {
        assert_eq!(field(r"a:b\c"), r"a\:b\c");
        assert_eq!(untrusted_field("a:b\\c\n"), r"a\:bc");
    }
}
