//! The image's layout (`graph_size_location`, `leg_place`): sizes of
//! the plot and the image, the legend's place, and text measured with
//! the Pango layout that draws it.

use super::*;

impl Image<'_> {
    pub(super) fn pt(&self, p: TextProp) -> f64 {
        self.o.font_sizes[p as usize]
    }

    /// The Pango font description of a text property.
    pub(super) fn font_desc(&self, p: TextProp) -> &str {
        self.o.font_names[p as usize].as_deref().unwrap_or(&self.default_font)
    }

    /// The logical pixel size of `s` in a text property's font, as
    /// RRDtool's `gfx_get_text_width`/`gfx_get_text_height` report it
    /// (markup measured as drawn, with `--pango-markup`).
    pub(super) fn measure_size(&self, prop: TextProp, s: &str) -> TextSize {
        measure_text(&self.text, self.o, &self.default_font, prop, s)
    }

    /// The width of [`Image::measure_size`].
    pub(super) fn measure(&self, prop: TextProp, s: &str) -> f64 {
        f64::from(self.measure_size(prop, s).width)
    }

    /// RRDtool's `graph_size_location`: image size, graph origin and the
    /// origins of title, legend and axis labels for every legend position.
    // Follows RRDtool's graph_size_location: one branch per legend position.
    #[allow(clippy::too_many_lines)]
    pub(super) fn size_location(&mut self) -> Result<()> {
        let o = self.o;
        if o.only_graph {
            self.xorigin = 0;
            self.ximg = self.xsize;
            self.yimg = self.ysize;
            self.yorigin = self.ysize;
            return Ok(());
        }
        let (x_spacing, y_spacing) = (15_i64, 15_i64);
        let y_watermark =
            if o.watermark.is_empty() { 4 } else { (self.pt(TextProp::Watermark) * 2.0) as i32 as i64 };
        let unit2 = (self.pt(TextProp::Unit) * 2.0) as i32 as i64;
        let x_vertical = if o.vertical_label.is_empty() { 0 } else { unit2 };
        let x_vertical2 = if o.right_axis_label.is_empty() { x_spacing } else { unit2 };
        let y_title = if o.title.is_empty() {
            y_spacing
        } else {
            (self.pt(TextProp::Title) * (title_lines(&o.title).len() as f64 + 1.0) * 1.6) as i32 as i64
        };
        let y_xlabel = if o.draw_x_grid { (self.pt(TextProp::Axis) * 2.5) as i32 as i64 } else { 0 };
        let mut x_ylabel = 0;
        if o.draw_y_grid || o.force_left_space {
            x_ylabel = (self.measure(TextProp::Axis, "0") * o.units_length as f64) as i32 as i64;
        }
        x_ylabel += x_spacing;
        let legend = !o.no_legend;
        let pos = o.legend_position;
        let side = legend && matches!(pos, LegendPosition::West | LegendPosition::East);
        let vertical = legend && matches!(pos, LegendPosition::North | LegendPosition::South);
        let right_axis = o.right_axis.is_some();
        self.legendheight = 0;
        self.legendwidth = 0.0;
        if side {
            self.leg_place(true)?;
        }
        let (x_main, y_main);
        if o.full_size_mode {
            self.ximg = self.xsize;
            self.yimg = self.ysize;
            let mut xm = self.ximg - x_ylabel;
            if side {
                xm = (xm as f64 - self.legendwidth) as i32 as i64;
            }
            if right_axis {
                xm -= x_ylabel;
            }
            if !o.no_rrdtool_tag {
                xm -= x_spacing;
            }
            xm -= x_vertical + x_vertical2;
            xm = xm.max(1);
            self.xsize = xm;
            x_main = xm;
            if vertical {
                self.legendwidth = self.ximg as f64;
                self.leg_place(false)?;
            }
            let mut ym = self.yimg as f64;
            ym -= (y_xlabel + if vertical { self.legendheight } else { 0 }) as f64;
            ym -= y_title as f64;
            if o.no_legend {
                ym -= 0.5 * y_spacing as f64;
            }
            if !o.watermark.is_empty() {
                ym -= y_watermark as f64;
            }
            let ym = (ym as i32 as i64).max(1);
            self.ysize = ym;
            y_main = ym;
        } else {
            x_main = self.xsize;
            y_main = self.ysize;
            self.ximg = self.xsize + x_ylabel;
            if !o.no_rrdtool_tag {
                self.ximg += x_spacing;
            }
            if side {
                self.ximg = (self.ximg as f64 + self.legendwidth) as i32 as i64;
            }
            if right_axis {
                self.ximg += x_ylabel;
            }
            self.ximg += x_vertical + x_vertical2;
            if vertical {
                self.legendwidth = self.ximg as f64;
                self.leg_place(false)?;
            }
            let mut yimg = (y_main + y_xlabel) as f64;
            if vertical {
                yimg += self.legendheight as f64;
            }
            yimg += y_title as f64;
            if o.no_legend {
                yimg += 0.5 * y_spacing as f64;
            }
            if !o.watermark.is_empty() {
                yimg += y_watermark as f64;
            }
            self.yimg = yimg as i32 as i64;
        }
        if side {
            self.leg_place(false)?;
        }
        let lw = self.legendwidth;
        let lh = self.legendheight;
        let right2 = if right_axis { x_ylabel } else { 0 };
        self.x_origin_legend_y2 = x_vertical + x_ylabel + x_main + right2;
        self.y_origin_legend_y2 = y_title + y_main / 2;
        // As in rrdtool, the position counts even without a legend.
        match pos {
            LegendPosition::North => {
                self.x_origin_legend = 0;
                self.y_origin_legend = y_title;
                self.x_origin_legend_y = 0;
                self.y_origin_legend_y = y_title + lh + y_main / 2 + y_xlabel;
                self.xorigin = x_vertical + x_ylabel;
                self.yorigin = y_title + lh + y_main;
                self.y_origin_legend_y2 = y_title + lh + y_main / 2 + y_xlabel;
            }
            LegendPosition::West => {
                self.x_origin_legend = 0;
                self.y_origin_legend = y_title;
                self.x_origin_legend_y = lw as i32 as i64;
                self.y_origin_legend_y = y_title + y_main / 2;
                self.xorigin = (lw + (x_vertical + x_ylabel) as f64) as i32 as i64;
                self.yorigin = y_title + y_main;
                self.x_origin_legend_y2 =
                    (lw + (x_vertical + x_ylabel + x_main + right2) as f64) as i32 as i64;
            }
            LegendPosition::South => {
                self.x_origin_legend = 0;
                self.y_origin_legend = y_title + y_main + y_xlabel;
                self.x_origin_legend_y = 0;
                self.y_origin_legend_y = y_title + y_main / 2;
                self.xorigin = x_vertical + x_ylabel;
                self.yorigin = y_title + y_main;
            }
            LegendPosition::East => {
                self.x_origin_legend = x_vertical + x_ylabel + x_main + x_vertical2 + right2;
                self.y_origin_legend = y_title;
                self.x_origin_legend_y = 0;
                self.y_origin_legend_y = y_title + y_main / 2;
                self.xorigin = x_vertical + x_ylabel;
                self.yorigin = y_title + y_main;
                if !o.no_rrdtool_tag {
                    self.x_origin_legend += x_spacing;
                    self.x_origin_legend_y += x_spacing;
                    self.xorigin += x_spacing;
                    self.x_origin_legend_y2 += x_spacing;
                }
            }
        }
        Ok(())
    }

    /// RRDtool's `leg_place` (south legend): splits legends into lines,
    /// honours `\l \r \c \j \s \g \u \n \.` and TEXTALIGN, and sets each
    /// legend's position and the legend height.
    // Follows RRDtool's leg_place.
    #[allow(clippy::too_many_lines)]
    pub(super) fn leg_place(&mut self, calc_width: bool) -> Result<()> {
        let o = self.o;
        if o.no_legend || o.only_graph {
            return Ok(());
        }
        let legend_pt = self.pt(TextProp::Legend);
        let interleg = (legend_pt * 2.0) as i32 as i64;
        let border = (legend_pt * 2.0) as i32 as i64;
        let mut legendwidth = if calc_width { 0.0 } else { self.legendwidth - 2.0 * border as f64 };
        // Measuring only (a legend beside the graph): the legends are
        // put back as they were.
        let saved: Vec<String> =
            if calc_width { self.items.iter().map(|i| i.legend.clone()).collect() } else { Vec::new() };
        let mut fill: i64 = 0;
        let mut leg_c = 0;
        let mut leg_y: i64 = 0;
        let mut mark = 0;
        let mut default_align = 'j';
        let n = self.items.len();
        let mut legspace = vec![0i64; n];
        let mut i: usize = 0;
        while i < n {
            let fill_last = fill;
            if let Kind::TextAlign(a) = self.items[i].el.kind {
                default_align = match a {
                    Align::Left => 'l',
                    Align::Right => 'r',
                    Align::Justified => 'j',
                    Align::Center => 'c',
                };
            }
            if !o.force_rules_legend {
                let item = &self.items[i];
                let hide = match item.el.kind {
                    Kind::HRule { .. } => item.yrule < self.minval || item.yrule > self.maxval,
                    Kind::VRule { .. } => item.xrule < self.start || item.xrule > self.end,
                    _ => false,
                };
                if hide {
                    self.items[i].legend.clear();
                }
            }
            let legend = &mut self.items[i].legend;
            if legend.contains("\\t") {
                *legend = legend.replace("\\t", "\t");
            }
            let mut prt = '\0';
            let bytes = legend.as_bytes();
            if bytes.len() >= 2 && bytes[bytes.len() - 2] == b'\\' && bytes[bytes.len() - 1].is_ascii() {
                prt = bytes[bytes.len() - 1] as char;
                legend.truncate(legend.len() - 2);
            }
            if !matches!(prt, 'l' | 'n' | 'r' | 'j' | 'c' | 'u' | '.' | 's' | '\0' | 'g') {
                return Err(GraphError::invalid(format!(
                    "Unknown control code at the end of '{legend}\\{prt}'"
                )));
            }
            if prt == 'n' {
                prt = 'l';
            }
            if prt == '.' {
                prt = '\0';
            }
            if prt == 'g' {
                while legend.ends_with(' ') {
                    legend.pop();
                }
            }
            if !legend.is_empty() {
                legspace[i] = if prt == 'g' { 0 } else { interleg };
                if fill > 0 {
                    fill += legspace[i];
                }
                let w =
                    measure_text(&self.text, o, &self.default_font, TextProp::Legend, legend).width as i64;
                fill += w;
                leg_c += 1;
            } else {
                legspace[i] = 0;
            }
            if prt == 'g' {
                prt = '\0';
            }
            if prt == '\0' {
                if calc_width && fill as f64 > legendwidth {
                    legendwidth = fill as f64;
                }
                if i == n - 1 || fill as f64 > legendwidth {
                    prt = default_align;
                }
                if fill as f64 > legendwidth && leg_c > 1 {
                    // Too wide: this legend starts the next line.
                    i -= 1;
                    fill = fill_last;
                    leg_c -= 1;
                }
                if leg_c == 1 && prt == 'j' {
                    prt = 'l';
                }
            }
            if prt != '\0' {
                let mut leg_x = border as f64;
                let glue = if leg_c >= 2 && prt == 'j' {
                    (legendwidth - fill as f64) / (leg_c - 1) as f64
                } else {
                    0.0
                };
                if prt == 'c' {
                    leg_x = border as f64 + (legendwidth - fill as f64) / 2.0;
                }
                if prt == 'r' {
                    leg_x = legendwidth - fill as f64 + border as f64;
                }
                for (item, space) in self.items[mark..=i].iter_mut().zip(&legspace[mark..=i]) {
                    if item.legend.is_empty() {
                        continue;
                    }
                    item.leg_x = leg_x;
                    item.leg_y = (leg_y + border) as f64;
                    leg_x += f64::from(
                        measure_text(&self.text, o, &self.default_font, TextProp::Legend, &item.legend).width,
                    ) + *space as f64
                        + glue;
                }
                // C's int arithmetic: the double result is truncated.
                if leg_x > border as f64 || prt == 's' {
                    leg_y = (leg_y as f64 + legend_pt * 1.8) as i64;
                }
                if prt == 's' {
                    leg_y = (leg_y as f64 - legend_pt) as i64;
                }
                if prt == 'u' {
                    leg_y = (leg_y as f64 - legend_pt * 1.8) as i64;
                }
                if calc_width && fill as f64 > legendwidth {
                    legendwidth = fill as f64;
                }
                fill = 0;
                leg_c = 0;
                mark = i + 1;
            }
            i += 1;
        }
        if calc_width {
            self.legendwidth = legendwidth + 2.0 * border as f64;
            for (item, legend) in self.items.iter_mut().zip(saved) {
                item.legend = legend;
            }
        } else {
            self.legendheight = (leg_y as f64 + border as f64 * 0.6) as i64;
        }
        Ok(())
    }
}

/// The distance between tab stops. rrdtool sets Pango's tab stops once,
/// from the first text it measures, at `tabwidth × i − shift + border`
/// (border: twice the legend size, shift: that text's x modulo the tab
/// width) for as many stops as that text has bytes, and Pango repeats the
/// last distance. The first text is the y axis label "0" at x 0 (stops
/// every tabwidth + border), or, without y labels, the first legend at x
/// = border (stops every tabwidth).
pub(super) fn tab_period(o: &Options) -> f64 {
    let tw = if o.tab_width > 0.0 { o.tab_width } else { 40.0 };
    let border = f64::from((o.font_sizes[TextProp::Legend as usize] * 2.0) as i32);
    if (o.draw_y_grid || o.force_left_space) && !o.only_graph {
        tw + border
    } else if border < tw {
        tw
    } else {
        tw + border - border % tw
    }
}

/// [`Image::measure_size`] from the parts of an image, for code that
/// holds its items mutably.
pub(super) fn measure_text(
    text: &SharedLayout,
    o: &Options,
    default_font: &str,
    prop: TextProp,
    s: &str,
) -> TextSize {
    text.borrow_mut().measure(&TextSpec {
        x: 0.0,
        y: 0.0,
        color: Color::new(0.0, 0.0, 0.0, 0.0),
        size_pt: o.font_sizes[prop as usize],
        font: o.font_names[prop as usize].as_deref().unwrap_or(default_font),
        tab_width: tab_period(o),
        angle: 0.0,
        h: HAlign::Left,
        v: VAlign::Top,
        text: s,
        markup: o.pango_markup,
    })
}

/// The lines of a title, split as rrdtool's `graph_title_split` splits
/// it: at a newline, a literal `\\n`, `<br>` or `<br/>`; empty lines from
/// a leading or doubled delimiter dropped, at most three lines (the rest
/// of the text after the third is dropped).
pub(super) fn title_lines(title: &str) -> Vec<&str> {
    const DELIMS: [&str; 4] = ["\n", "\\n", "<br>", "<br/>"];
    const MAX_LINES: usize = 3;
    if title.is_empty() {
        return Vec::new();
    }
    let mut lines = Vec::new();
    let mut rest = title;
    loop {
        let found = DELIMS.iter().filter_map(|d| rest.find(d).map(|at| (at, d.len()))).fold(
            None,
            |best: Option<(usize, usize)>, (at, len)| match best {
                Some((b, _)) if b <= at => best,
                _ => Some((at, len)),
            },
        );
        match found {
            Some((at, len)) => {
                if at != 0 {
                    lines.push(&rest[..at]);
                }
                rest = &rest[at + len..];
                if lines.len() >= MAX_LINES {
                    break;
                }
            }
            None => {
                lines.push(rest);
                break;
            }
        }
    }
    lines
}
