//! The frame around the plot: title, legends, the grids (linear,
//! logarithmic, time) and their labels, the axes.

use super::*;

impl Image<'_> {
    /// RRDtool's `grid_paint`, drawing in its order: the border, the grids,
    /// the titles and labels, then the legends.
    pub(super) fn grid_paint(
        &mut self,
        c: &mut dyn Canvas,
        has_grid: bool,
        info: &mut Vec<(String, InfoValue)>,
    ) {
        let o = self.o;
        let (ximg, yimg) = (self.ximg as f64, self.yimg as f64);
        if o.border > 0 {
            let b = o.border as f64;
            self.area(
                c,
                &[(0.0, yimg), (b, yimg - b), (b, b), (ximg - b, b), (ximg, 0.0), (0.0, 0.0)],
                self.color(ColorTag::ShadeA),
            );
            self.area(
                c,
                &[(b, yimg - b), (ximg - b, yimg - b), (ximg - b, b), (ximg, 0.0), (ximg, yimg), (0.0, yimg)],
                self.color(ColorTag::ShadeB),
            );
        }
        if o.draw_x_grid {
            self.vertical_grid(c);
        }
        if o.draw_y_grid {
            let drew = if o.logarithmic {
                self.log_grid(c);
                true
            } else {
                has_grid && self.horizontal_grid(c)
            };
            if !drew {
                self.text(
                    c,
                    (self.ximg / 2) as f64,
                    ((2 * self.yorigin - self.ysize) / 2) as f64,
                    self.color(ColorTag::Font),
                    TextProp::Axis,
                    0.0,
                    HAlign::Center,
                    VAlign::Center,
                    "No Data found",
                );
            }
        }
        self.titles_paint(c);
        if o.no_legend || o.only_graph {
            return;
        }
        self.legends_paint(c, info);
    }

    /// The vertical and the right axis' labels, the title, rrdscale's tag
    /// and the watermark.
    fn titles_paint(&self, c: &mut dyn Canvas) {
        let o = self.o;
        let (ximg, yimg) = (self.ximg as f64, self.yimg as f64);
        let font_color = self.color(ColorTag::Font);
        if !o.vertical_label.is_empty() {
            self.text(
                c,
                (self.x_origin_legend_y + 10) as f64,
                self.y_origin_legend_y as f64,
                font_color,
                TextProp::Unit,
                90.0,
                HAlign::Center,
                VAlign::Center,
                &o.vertical_label,
            );
        }
        if !o.right_axis_label.is_empty() {
            self.text(
                c,
                (self.x_origin_legend_y2 + 10) as f64,
                self.y_origin_legend_y2 as f64,
                font_color,
                TextProp::Unit,
                90.0,
                HAlign::Center,
                VAlign::Center,
                &o.right_axis_label,
            );
        }
        let title_pt = self.pt(TextProp::Title);
        for (j, line) in title_lines(&o.title).iter().enumerate() {
            self.text(
                c,
                (self.ximg / 2) as f64,
                title_pt * 1.3 + title_pt * 1.6 * j as f64,
                font_color,
                TextProp::Title,
                0.0,
                HAlign::Center,
                VAlign::Top,
                line,
            );
        }
        let faint = font_color.with_alpha(0.3);
        if !o.no_rrdtool_tag {
            // Where RRDtool puts its own name, ours.
            let x = if o.legend_position == LegendPosition::East {
                self.x_origin_legend_y as f64
            } else {
                ximg - 4.0
            };
            self.text(c, x, 5.0, faint, TextProp::Watermark, -90.0, HAlign::Left, VAlign::Top, "RRDSCALE");
        }
        if !o.watermark.is_empty() {
            // Integer halving, as RRDtool's C does with its `long` width.
            self.text(
                c,
                (self.ximg / 2) as f64,
                yimg - 6.0,
                faint,
                TextProp::Watermark,
                0.0,
                HAlign::Center,
                VAlign::Bottom,
                &o.watermark,
            );
        }
    }

    /// The legends, in --legend-direction's order: each item's text, its
    /// box (or, with --dynamic-labels, its line), and graphv's `legend[i]`
    /// and `coords[i]`.
    fn legends_paint(&self, c: &mut dyn Canvas, info: &mut Vec<(String, InfoValue)>) {
        let o = self.o;
        let font_color = self.color(ColorTag::Font);
        // --legend-direction: the first and last legend lines (of
        // graph elements only, for bottomup2).
        let shown = || self.items.iter().enumerate().filter(|(_, it)| !it.legend.is_empty());
        let bottomup2 = o.legend_direction == LegendDirection::BottomUp2;
        let (min, first_nc) = legend_end(shown(), bottomup2);
        let (max, last_nc) = legend_end(shown().rev(), bottomup2);
        let (min, max) = (min.unwrap_or(0.0), max.unwrap_or(0.0));
        let (first_nc, last_nc) = (first_nc.unwrap_or(self.items.len()), last_nc.unwrap_or(0));
        let mut count = 0;
        for (i, item) in self.items.iter().enumerate() {
            if item.legend.is_empty() {
                continue;
            }
            let reverse = match o.legend_direction {
                LegendDirection::TopDown => false,
                LegendDirection::BottomUp => true,
                LegendDirection::BottomUp2 => i >= first_nc && i <= last_nc,
            };
            let x0 = self.x_origin_legend as f64 + item.leg_x;
            let y0 = if reverse {
                self.y_origin_legend as f64 + max + min - item.leg_y
            } else {
                self.y_origin_legend as f64 + item.leg_y
            };
            self.text(
                c,
                x0,
                y0,
                font_color,
                TextProp::Legend,
                0.0,
                HAlign::Left,
                VAlign::Bottom,
                &item.legend,
            );
            // Measured after drawing: on the zoomed surface, as rrdtool does.
            let w = self.measure(TextProp::Legend, &item.legend);
            let h = self.measure_size(TextProp::Legend, &item.legend).height as f64;
            info.push((format!("legend[{count}]"), InfoValue::Text(item.legend.clone())));
            info.push((
                format!("coords[{count}]"),
                InfoValue::Text(format!("{:.0},{:.0},{:.0},{:.0}", x0, y0 - h, x0 + w, y0)),
            ));
            count += 1;
            let color = match &item.el.kind {
                Kind::Plot(p) => p.color,
                Kind::HRule { color, .. } | Kind::VRule { color, .. } => *color,
                _ => continue,
            };
            let box_h = self.measure(TextProp::Legend, "o") * 1.2;
            let box_v = box_h;
            let y0 = y0 - box_v * 0.4;
            let dashed = match &item.el.kind {
                Kind::Plot(p) => p.dashes.is_some(),
                Kind::HRule { dashes, .. } | Kind::VRule { dashes, .. } => dashes.is_some(),
                _ => false,
            };
            let dash = dashed.then_some(Dash::Element(&[3.0, 3.0]));
            if o.dynamic_labels {
                let col = color.unwrap_or(Rgba::new(0, 0, 0, 0));
                match &item.el.kind {
                    Kind::HRule { .. } => {
                        self.line(c, (x0, y0 - box_v / 2.0), (x0 + box_h, y0 - box_v / 2.0), 1.0, col, dash);
                        continue;
                    }
                    Kind::VRule { .. } => {
                        self.line(c, (x0 + box_h / 2.0, y0), (x0 + box_h / 2.0, y0 - box_v), 1.0, col, dash);
                        continue;
                    }
                    Kind::Plot(p) if !p.is_area => {
                        self.line(c, (x0, y0), (x0 + box_h, y0 - box_v), p.width, col, dash);
                        continue;
                    }
                    _ => {}
                }
            }
            let square = [(x0, y0 - box_v), (x0, y0), (x0 + box_h, y0), (x0 + box_h, y0 - box_v)];
            self.area(c, &square, self.color(ColorTag::Back));
            if let Some(col) = color {
                self.area(c, &square, col);
            }
            let (a, b) = (self.line_fit(x0, y0, 1.0), self.line_fit(x0 + box_h, y0 - box_v, 1.0));
            c.stroke(
                &[vec![(a.0, a.1), (b.0, a.1), (b.0, b.1), (a.0, b.1), (a.0, a.1)]],
                1.0,
                self.color(ColorTag::Frame),
                self.dash_pattern(dash, 1.0),
                false,
            );
        }
    }

    /// Horizontal grid lines and their labels (RRDtool's classic grid).
    pub(super) fn horizontal_grid(&self, c: &mut dyn Canvas) -> bool {
        let sgrid = c_int(self.minval / self.gridstep - 1.0) as i64;
        let egrid = c_int(self.maxval / self.gridstep + 1.0) as i64;
        // A degenerate range (infinite limits) must not become a long loop.
        if egrid - sgrid > 100_000 {
            return false;
        }
        let scaledstep = self.gridstep / self.magfact * self.viewfactor;
        let max_y = scaledstep * egrid as f64;
        let top = (self.yorigin - self.ysize) as f64;
        let bottom = self.yorigin as f64;
        let mut nlabels = 0;
        let mut right_mag = None;
        for i in sgrid..=egrid {
            let y0 = self.ytr(self.gridstep * i as f64);
            let yn = self.ytr(self.gridstep * (i + 1) as f64);
            if (y0 + 0.5).floor() < top || (y0 + 0.5).floor() > bottom {
                continue;
            }
            if i % self.labfact == 0 || (nlabels == 1 && (yn < top || yn > bottom)) {
                let label = self.y_label(i, scaledstep * i as f64, max_y);
                nlabels += 1;
                if self.o.right_axis.is_some() {
                    let right = self.y_label_right(i, sgrid, egrid, max_y, &mut right_mag);
                    self.right_axis_label(c, y0, &right);
                }
                self.left_axis_label(c, y0, &label);
                self.major_grid_line(c, y0);
            } else if !self.o.no_minor {
                self.minor_grid_line(c, y0);
            }
        }
        true
    }

    /// A major horizontal grid line at `y0` (the linear and the log grid
    /// draw the same).
    fn major_grid_line(&self, c: &mut dyn Canvas, y0: f64) {
        self.grid_line(c, y0, ColorTag::MGrid, MGRID_WIDTH, 2.0);
    }

    /// A minor horizontal grid line at `y0`.
    fn minor_grid_line(&self, c: &mut dyn Canvas, y0: f64) {
        self.grid_line(c, y0, ColorTag::Grid, GRID_WIDTH, 1.0);
    }

    /// A horizontal grid line at `y0`: a 2-pixel tick outside the plot on
    /// each side, and the dashed line across, `reach` pixels past the plot.
    fn grid_line(&self, c: &mut dyn Canvas, y0: f64, tag: ColorTag, width: f64, reach: f64) {
        let (x0, x1) = (self.xorigin as f64, (self.xorigin + self.xsize) as f64);
        let color = self.color(tag);
        self.line(c, (x0 - 2.0, y0), (x0, y0), width, color, None);
        self.line(c, (x1, y0), (x1 + 2.0, y0), width, color, None);
        self.line(c, (x0 - reach, y0), (x1 + reach, y0), width, color, Some(Dash::Grid));
    }

    /// A y-axis label at `y0`, right-aligned left of the plot.
    fn left_axis_label(&self, c: &mut dyn Canvas, y0: f64, label: &str) {
        let x = self.xorigin as f64 - self.pt(TextProp::Axis);
        let font = self.color(ColorTag::Font);
        self.text(c, x, y0, font, TextProp::Axis, 0.0, HAlign::Right, VAlign::Center, label);
    }

    /// A right-axis label at `y0`, left-aligned right of the plot.
    fn right_axis_label(&self, c: &mut dyn Canvas, y0: f64, label: &str) {
        let x = (self.xorigin + self.xsize) as f64 + 7.0;
        let font = self.color(ColorTag::Font);
        self.text(c, x, y0, font, TextProp::Axis, 0.0, HAlign::Left, VAlign::Center, label);
    }

    /// RRDtool's `horizontal_log_grid`: decades, with minor lines between.
    // Follows RRDtool's horizontal_log_grid; its closures share the grid's state.
    #[allow(clippy::too_many_lines)]
    pub(super) fn log_grid(&self, c: &mut dyn Canvas) {
        const YLOGLAB: [[f64; 10]; 5] = [
            [1.0, 10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            [1.0, 5.0, 10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            [1.0, 2.0, 5.0, 7.0, 10.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            [1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 0.0, 0.0, 0.0, 0.0],
            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0],
        ];
        let nex = (self.maxval / self.minval).log10();
        if nex.is_nan() || nex <= 0.0 || !nex.is_finite() {
            return;
        }
        let logscale = self.ysize as f64 / nex;
        let mut exfrac = 1_i64;
        let legend_pt = self.pt(TextProp::Legend);
        while logscale * (exfrac as f64) < 3.0 * legend_pt && exfrac < 1000 {
            exfrac = if exfrac == 1 { 3 } else { exfrac + 3 };
        }
        let mut mid: usize = 0;
        loop {
            let last = YLOGLAB[mid].iter().position(|v| *v >= 10.0).unwrap_or(1) - 1;
            let mspac = logscale * (10.0 / YLOGLAB[mid][last]).log10();
            if mspac <= 2.0 * legend_pt || mid + 1 >= YLOGLAB.len() {
                break;
            }
            mid += 1;
        }
        mid = mid.saturating_sub(1);
        let (mnt, exp) = frexp10(self.minval);
        let mut flab = 0;
        while YLOGLAB[mid][flab] < 10.0 && mnt > YLOGLAB[mid][flab] {
            flab += 1;
        }
        let mut val_exp = exp as i64;
        if YLOGLAB[mid][flab] == 10.0 {
            val_exp += 1;
            flab = 0;
        }
        if val_exp % exfrac != 0 {
            val_exp += (-val_exp % exfrac).abs();
        }
        let top = (self.yorigin - self.ysize) as f64;
        let minor = |c: &mut dyn Canvas, value: f64| -> bool {
            if value < self.minval {
                return true;
            }
            let y0 = self.ytr(value);
            if (y0 + 0.5).floor() <= top {
                return false;
            }
            self.minor_grid_line(c, y0);
            true
        };
        let minors_below = |c: &mut dyn Canvas, flab: usize, val_exp: i64| {
            if mid < 4 && exfrac == 1 {
                let (min_exp, from, to) = if flab == 0 {
                    let last = YLOGLAB[mid].iter().position(|v| *v >= 10.0).unwrap_or(1);
                    (val_exp - 1, YLOGLAB[mid][last - 1] as i64 + 1, 10)
                } else {
                    (val_exp, YLOGLAB[mid][flab - 1] as i64 + 1, YLOGLAB[mid][flab] as i64)
                };
                for k in from..to {
                    if !minor(c, k as f64 * 10f64.powi(min_exp as i32)) {
                        break;
                    }
                }
            } else if exfrac > 1 {
                let mut k = val_exp - exfrac / 3 * 2;
                while k < val_exp {
                    if !minor(c, 10f64.powi(k as i32)) {
                        break;
                    }
                    k += exfrac / 3;
                }
            }
        };
        let mut pre_value = f64::NAN;
        for _ in 0..1000 {
            let value = YLOGLAB[mid][flab] * 10f64.powi(val_exp as i32);
            if almost_equal(value, pre_value, 4) {
                break;
            }
            pre_value = value;
            let y0 = self.ytr(value);
            if (y0 + 0.5).floor() <= top {
                break;
            }
            self.major_grid_line(c, y0);
            let label = if self.o.units_si {
                const SI: [char; 17] =
                    ['y', 'z', 'a', 'f', 'p', 'n', 'u', 'm', ' ', 'k', 'M', 'G', 'T', 'P', 'E', 'Z', 'Y'];
                let scale = (val_exp as f64 / 3.0).floor() as i64;
                let pvalue = if value >= 1.0 {
                    10f64.powi((val_exp % 3) as i32)
                } else {
                    10f64.powi(((val_exp + 1) % 3 + 2) as i32)
                } * YLOGLAB[mid][flab];
                let sym = usize::try_from(scale + 8).ok().and_then(|i| SI.get(i)).copied().unwrap_or('?');
                format!("{pvalue:3.0} {sym}")
            } else {
                rrd_lang::cformat::printf(
                    value,
                    rrd_lang::cformat::Conversion { flag: None, width: 3, precision: Some(0), conv: 'e' },
                )
            };
            if let Some((scale, shift)) = self.o.right_axis {
                let sval = value * scale + shift;
                let right = if !self.o.right_axis_format.is_empty() {
                    crate::labels::axis_format(&self.o.right_axis_format)
                        .map(|f| f.format(sval, ""))
                        .unwrap_or_default()
                } else if self.o.units_si {
                    let (v, symb, _) = auto_scale(sval, self.o.base as f64);
                    format!("{v:4.0} {symb}")
                } else {
                    rrd_lang::cformat::printf(
                        sval,
                        rrd_lang::cformat::Conversion { flag: None, width: 3, precision: Some(0), conv: 'e' },
                    )
                };
                self.right_axis_label(c, y0, &right);
            }
            self.left_axis_label(c, y0, &label);
            minors_below(c, flab, val_exp);
            flab += 1;
            if YLOGLAB[mid][flab] == 10.0 {
                flab = 0;
                val_exp += exfrac;
            }
        }
        minors_below(c, flab, val_exp);
    }

    /// RRDtool's `vertical_grid`: minor and major time lines and labels.
    pub(super) fn vertical_grid(&self, c: &mut dyn Canvas) {
        let (xl, format) = match &self.o.x_grid {
            Some(g) => (timeaxis::XLabel::user(g.grid, g.major, g.label, g.precision), g.format.as_str()),
            None => {
                let xl = timeaxis::choose(self.end - self.start, self.xsize);
                (xl, if xl.is_weekly() { self.o.week_fmt.as_str() } else { xl.format })
            }
        };
        let (y0, y1) = (self.yorigin as f64, (self.yorigin - self.ysize) as f64);
        // Bounded loops: a pathological clock must not hang the graph.
        const MAX_LINES: usize = 10_000;
        if !self.o.no_minor {
            let mut ti = timeaxis::first_time(self.start, xl.grid);
            let mut timajor = timeaxis::first_time(self.start, xl.major);
            let mut n = 0;
            while ti < self.end && ti != -1 && n < MAX_LINES {
                n += 1;
                if ti >= self.start && ti <= self.end {
                    let mut m = 0;
                    while timajor < ti && timajor != -1 && m < MAX_LINES {
                        timajor = timeaxis::next_time(timajor, xl.major);
                        m += 1;
                    }
                    if timajor == -1 {
                        break;
                    }
                    if ti != timajor {
                        let x0 = self.xtr(ti);
                        let g = self.color(ColorTag::Grid);
                        self.line(c, (x0, y1 - 2.0), (x0, y1), GRID_WIDTH, g, None);
                        self.line(c, (x0, y0), (x0, y0 + 2.0), GRID_WIDTH, g, None);
                        self.line(c, (x0, y0 + 1.0), (x0, y1 - 1.0), GRID_WIDTH, g, Some(Dash::Grid));
                    }
                }
                ti = timeaxis::next_time(ti, xl.grid);
            }
        }
        let mut ti = timeaxis::first_time(self.start, xl.major);
        let mut n = 0;
        while ti < self.end && ti != -1 && n < MAX_LINES {
            n += 1;
            if ti >= self.start && ti <= self.end {
                let x0 = self.xtr(ti);
                let mg = self.color(ColorTag::MGrid);
                self.line(c, (x0, y1 - 2.0), (x0, y1), MGRID_WIDTH, mg, None);
                self.line(c, (x0, y0), (x0, y0 + 3.0), MGRID_WIDTH, mg, None);
                self.line(c, (x0, y0 + 3.0), (x0, y1 - 2.0), MGRID_WIDTH, mg, Some(Dash::Grid));
            }
            ti = timeaxis::next_time(ti, xl.major);
        }
        let mut ti = timeaxis::first_time(self.start - xl.precision / 2, xl.label);
        let mut n = 0;
        while ti <= self.end - xl.precision / 2 && ti != -1 && n < MAX_LINES {
            n += 1;
            let tilab = ti + xl.precision / 2;
            if tilab >= self.start && tilab <= self.end {
                let label = timeaxis::format_time(tilab, format);
                self.text(
                    c,
                    self.xtr(tilab),
                    y0 + 3.0,
                    self.color(ColorTag::Font),
                    TextProp::Axis,
                    0.0,
                    HAlign::Center,
                    VAlign::Top,
                    &label,
                );
            }
            ti = timeaxis::next_time(ti, xl.label);
        }
    }

    /// The x and y axis with their arrows.
    pub(super) fn axis_paint(&self, c: &mut dyn Canvas) {
        let (xo, yo, xs, ys) =
            (self.xorigin as f64, self.yorigin as f64, self.xsize as f64, self.ysize as f64);
        let axis = self.color(ColorTag::Axis);
        self.line(c, (xo - 4.0, yo), (xo + xs + 4.0, yo), MGRID_WIDTH, axis, None);
        self.line(c, (xo, yo + 4.0), (xo, yo - ys - 4.0), MGRID_WIDTH, axis, None);
        let arrow = self.color(ColorTag::Arrow);
        self.area(c, &[(xo + xs + 2.0, yo - 3.0), (xo + xs + 2.0, yo + 3.0), (xo + xs + 7.0, yo)], arrow);
        self.area(c, &[(xo - 3.0, yo - ys - 2.0), (xo + 3.0, yo - ys - 2.0), (xo, yo - ys - 7.0)], arrow);
        if self.o.right_axis.is_some() {
            let xr = xo + xs;
            self.line(c, (xr, yo + 4.0), (xr, yo - ys - 4.0), MGRID_WIDTH, axis, None);
            self.area(c, &[(xr - 2.0, yo - ys - 2.0), (xr + 3.0, yo - ys - 2.0), (xr, yo - ys - 7.0)], arrow);
        }
    }
}

/// Drops repeated points and the middle of straight horizontal or
/// vertical runs (RRDtool's step paths repeat both a lot); the shape is
/// unchanged, the SVG much smaller.
/// One end of the legend for --legend-direction, scanning the items that
/// have a legend from that end: the legend line there (with bottomup2, the
/// line of the first graph element, not comment, met) and the index of the
/// first graph element met. `None` where the scan met no such item.
pub(super) fn legend_end<'a>(
    shown: impl Iterator<Item = (usize, &'a Item)>,
    bottomup2: bool,
) -> (Option<f64>, Option<usize>) {
    let mut end = None;
    for (i, it) in shown {
        let first = *end.get_or_insert(it.leg_y);
        if !matches!(it.el.kind, Kind::Comment) {
            return (Some(if bottomup2 { it.leg_y } else { first }), Some(i));
        }
    }
    (end, None)
}

/// RRDtool's `frexp10`: mantissa in [1, 10) and decimal exponent.
pub(super) fn frexp10(x: f64) -> (f64, f64) {
    let mut iexp = (x.abs().ln() / 10f64.ln()).floor();
    let mut mnt = x / 10f64.powf(iexp);
    if mnt >= 10.0 {
        iexp += 1.0;
        mnt = x / 10f64.powf(iexp);
    }
    (mnt, iexp)
}
