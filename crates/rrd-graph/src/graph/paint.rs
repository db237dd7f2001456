//! Drawing: value and time to device coordinates, rrdtool's grid fitting
//! of lines and areas, and the LINEs, AREAs, TICKs and rules of the plot.

use super::*;

impl Image<'_> {
    pub(super) fn color(&self, tag: ColorTag) -> Color {
        let i = tag as usize;
        if self.o.colors_given[i] {
            return self.o.colors[i].into();
        }
        let [r, g, b, a] = crate::options::DEFAULT_UNIT_COLORS[i];
        Color::new(r, g, b, a)
    }

    pub(super) fn xtr(&self, t: i64) -> f64 {
        let pixie = self.xsize as f64 / (self.end - self.start).max(1) as f64;
        c_int(self.xorigin as f64 + pixie * (t - self.start) as f64) as f64
    }

    pub(super) fn ytr(&self, value: f64) -> f64 {
        let yorigin = self.yorigin as f64;
        if value.is_nan() {
            return yorigin;
        }
        if !self.o.logarithmic {
            let pixie = self.ysize as f64 / (self.maxval - self.minval);
            yorigin - pixie * (value - self.minval)
        } else {
            let pixie = self.ysize as f64 / (self.maxval.log10() - self.minval.log10());
            if value < self.minval {
                yorigin
            } else {
                yorigin - pixie * (value.log10() - self.minval.log10())
            }
        }
    }

    /// RRDtool's `gfx_line_fit`, in device pixels (`--zoom` scales them):
    /// a line of odd width is centred on a pixel, one of even width on the
    /// edge between two, moved left and down (so a 2-pixel line covers the
    /// pixel column before `x` and the row below `y`).
    pub(super) fn line_fit(&self, x: f64, y: f64, width: f64) -> (f64, f64) {
        if !self.gridfit {
            return (x, y);
        }
        let zoom = self.o.zoom;
        let w = width * zoom;
        let off = w / 2.0 - (w / 2.0).ceil();
        (((x * zoom - 0.5).floor() - off) / zoom, ((y * zoom + 0.5).ceil() + off) / zoom)
    }

    /// RRDtool's `gfx_area_fit`: area corners on whole device pixels, left
    /// and down.
    pub(super) fn area_fit(&self, x: f64, y: f64) -> (f64, f64) {
        if !self.gridfit {
            return (x, y);
        }
        let zoom = self.o.zoom;
        ((x * zoom).floor() / zoom, (y * zoom).ceil() / zoom)
    }

    /// Dashes and their offset: an element's start at 0; the grid's at
    /// the fitted origin, as RRDtool's `gfx_dashed_line` starts them.
    pub(super) fn dash_pattern<'d>(&'d self, dash: Option<Dash<'d>>, width: f64) -> Option<(&'d [f64], f64)> {
        match dash? {
            Dash::Element(d) => Some((d, 0.0)),
            Dash::Grid => Some((&self.grid_dash, self.line_fit(0.0, 0.0, width).0)),
        }
    }

    pub(super) fn line(
        &self,
        c: &mut dyn Canvas,
        p0: (f64, f64),
        p1: (f64, f64),
        width: f64,
        color: impl Into<Color>,
        dash: Option<Dash<'_>>,
    ) {
        let a = self.line_fit(p0.0, p0.1, width);
        let b = self.line_fit(p1.0, p1.1, width);
        c.stroke(&[vec![a, b]], width, color.into(), self.dash_pattern(dash, width), false);
    }

    pub(super) fn area(&self, c: &mut dyn Canvas, points: &[(f64, f64)], color: impl Into<Color>) {
        let pts: Vec<(f64, f64)> = points.iter().map(|p| self.area_fit(p.0, p.1)).collect();
        c.fill(&simplify(&pts), color.into());
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn text(
        &self,
        c: &mut dyn Canvas,
        x: f64,
        y: f64,
        color: impl Into<Color>,
        prop: TextProp,
        angle: f64,
        h: HAlign,
        v: VAlign,
        s: &str,
    ) {
        c.text(&TextSpec {
            x,
            y,
            color: color.into(),
            size_pt: self.pt(prop),
            font: self.font_desc(prop),
            tab_width: tab_period(self.o),
            angle,
            h,
            v,
            text: s,
            markup: self.o.pango_markup,
        });
    }

    pub(super) fn paint(&mut self, c: &mut dyn Canvas, has_grid: bool, info: &mut Vec<(String, InfoValue)>) {
        let (ximg, yimg) = (self.ximg as f64, self.yimg as f64);
        let (xo, yo, xs, ys) =
            (self.xorigin as f64, self.yorigin as f64, self.xsize as f64, self.ysize as f64);
        self.area(c, &[(0.0, 0.0), (0.0, yimg), (ximg, yimg), (ximg, 0.0)], self.color(ColorTag::Back));
        self.area(
            c,
            &[(xo, yo), (xo + xs, yo), (xo + xs, yo - ys), (xo, yo - ys)],
            self.color(ColorTag::Canvas),
        );
        c.clip(Some((xo, yo - ys - 1.0, xs, ys + 2.0)));
        self.paint_plots(c);
        c.clip(None);
        if !self.o.only_graph {
            self.grid_paint(c, has_grid, info);
            self.axis_paint(c);
        }
        for item in &self.items {
            match &item.el.kind {
                Kind::HRule { color: Some(col), dashes, .. }
                    if item.yrule >= self.minval && item.yrule <= self.maxval =>
                {
                    let y = self.ytr(item.yrule);
                    self.line(c, (xo, y), (xo + xs, y), 1.0, *col, dashes.as_deref().map(Dash::Element));
                }
                Kind::VRule { color: Some(col), dashes, .. }
                    if item.xrule >= self.start && item.xrule <= self.end =>
                {
                    let x = self.xtr(item.xrule);
                    self.line(c, (x, yo), (x, yo - ys), 1.0, *col, dashes.as_deref().map(Dash::Element));
                }
                _ => {}
            }
        }
    }

    /// LINEs and AREAs, in order, each stacking on the one before.
    pub(super) fn paint_plots(&mut self, c: &mut dyn Canvas) {
        let areazero = if self.minval > 0.0 {
            self.minval
        } else if self.maxval < 0.0 {
            self.maxval
        } else {
            0.0
        };
        let xsize = self.xsize.max(0) as usize;
        let xo = self.xorigin as f64;
        let diff = self.maxval - self.minval;
        let (maxlimit, minlimit) = (self.maxval + 9.0 * diff, self.minval - 9.0 * diff);
        let mut last: Option<usize> = None;
        for idx in 0..self.items.len() {
            let Kind::Plot(p) = self.items[idx].el.kind.clone() else { continue };
            let mut data = std::mem::take(&mut self.items[idx].p_data);
            for v in data.iter_mut().take(xsize) {
                if v.is_infinite() {
                    *v = if *v > 0.0 { self.maxval } else { self.minval };
                }
                if *v > maxlimit {
                    *v = maxlimit;
                }
                if *v < minlimit {
                    *v = minlimit;
                }
            }
            if let Some(fraction) = p.tick {
                // A mark per pixel where the value is known and not zero,
                // up from the bottom (or down from the top when negative).
                if let Some(color) = p.color.filter(|c| c.a != 0) {
                    let (yo, ys) = (self.yorigin as f64, self.ysize as f64);
                    for (ii, v) in data.iter().enumerate().take(xsize) {
                        if v.is_nan() || *v == 0.0 {
                            continue;
                        }
                        let x = xo + ii as f64;
                        if fraction > 0.0 {
                            self.line(c, (x, yo + 1.0), (x, yo - fraction * ys), 1.0, color, None);
                        } else if fraction < 0.0 {
                            self.line(c, (x, yo - ys - 1.0), (x, yo - ys - fraction * ys), 1.0, color, None);
                        }
                    }
                }
                self.items[idx].p_data = data;
                continue;
            }
            if let Some(color) = p.color.filter(|c| c.a != 0) {
                if !p.is_area {
                    self.paint_line(c, &data, p.width, color.into(), p.dashes.as_deref());
                } else {
                    let base_data = if p.stack { last.map(|l| self.items[l].p_data.clone()) } else { None };
                    // (x, back, fore) corners: RRDtool's backX/backY and
                    // foreX/foreY, the area widened by 0.2 pixel up and down.
                    let mut run: Vec<(f64, f64, f64)> = Vec::new();
                    for ii in 0..=xsize {
                        let v = data.get(ii).copied().unwrap_or(f64::NAN);
                        if ii == xsize || v.is_nan() {
                            self.area_run(c, &run, color.into(), p.gradient.map(|(c2, h)| (c2.into(), h)));
                            run.clear();
                            continue;
                        }
                        if !self.o.slope_mode && ii == 0 {
                            continue;
                        }
                        let mut top = self.ytr(v);
                        let mut base = match &base_data {
                            Some(b) => self.ytr(b[ii]),
                            None => self.ytr(areazero),
                        };
                        if top == base {
                            self.area_run(c, &run, color.into(), p.gradient.map(|(c2, h)| (c2.into(), h)));
                            run.clear();
                            continue;
                        }
                        if base > top {
                            std::mem::swap(&mut top, &mut base);
                        }
                        let x = ii as f64 + xo;
                        if !self.o.slope_mode {
                            run.push((x - 1.0, base - 0.2, top + 0.2));
                        }
                        run.push((x, base - 0.2, top + 0.2));
                    }
                }
            }
            // Unknown pixels stack on what is below them.
            for (ii, v) in data.iter_mut().enumerate().take(xsize) {
                if v.is_nan() {
                    *v = match (p.stack, last) {
                        (true, Some(l)) => self.items[l].p_data[ii],
                        _ => areazero,
                    };
                }
            }
            self.items[idx].p_data = data;
            last = Some(idx);
        }
    }

    /// One run of an AREA between unknown or empty pixels, drawn as
    /// RRDtool's `data_proc` draws it: the outline along the fore edge then
    /// back along the back edge, a point kept only where the edge bends (as
    /// `AlmostEqual2sComplement` sees it); a gradient AREA as rectangles,
    /// each from the run's first fore point to the next kept point.
    pub(super) fn area_run(
        &self,
        c: &mut dyn Canvas,
        run: &[(f64, f64, f64)],
        color: Color,
        gradient: Option<(Color, f64)>,
    ) {
        if run.len() < 2 {
            return;
        }
        let last = run.len() - 1;
        let flat = |a: f64, b: f64| almost_equal(a, b, 4);
        // Indices of the kept fore points, then of the kept back points.
        let mut fore = Vec::new();
        let mut i = 0;
        while i < last {
            let from = i;
            i += 1;
            while i < last && flat(run[from].2, run[i].2) && flat(run[from].2, run[i + 1].2) {
                i += 1;
            }
            fore.push(i);
        }
        let mut back = vec![last];
        let mut i = last;
        while i > 1 {
            let from = i;
            i -= 1;
            while i > 1 && flat(run[from].1, run[i].1) && flat(run[from].1, run[i - 1].1) {
                i -= 1;
            }
            back.push(i);
        }
        let Some((color2, height)) = gradient else {
            let mut poly = vec![(run[0].0, run[0].1), (run[0].0, run[0].2)];
            poly.extend(fore.iter().map(|&i| (run[i].0, run[i].2)));
            poly.extend(back.iter().map(|&i| (run[i].0, run[i].1)));
            self.area(c, &poly, color);
            return;
        };
        let y1 = run[0].2;
        let mut prev = (run[fore[0]].0, run[fore[0]].2);
        let points =
            fore[1..].iter().map(|&i| (run[i].0, run[i].2)).chain(back.iter().map(|&i| (run[i].0, run[i].1)));
        for to in points {
            self.rect_fade(c, (prev.0, y1), to, prev.1, (color, color2), height);
            prev = to;
        }
    }

    /// RRDtool's `gfx_add_rect_fadey`: the rectangle between two corners
    /// filled with a linear gradient from `colors.1` to `colors.0`, whose
    /// ends depend on `height` (`gradheight=`) and the previous point's
    /// y (`py`).
    pub(super) fn rect_fade(
        &self,
        c: &mut dyn Canvas,
        a: (f64, f64),
        b: (f64, f64),
        py: f64,
        colors: (Color, Color),
        height: f64,
    ) {
        let (x1, y1) = self.area_fit(a.0, a.1);
        let (x2, y2) = self.area_fit(b.0, b.1);
        let mid = (y2 + py) / 2.0;
        let (from, to) = if height < 0.0 {
            ((x1, y1), (x2, y1 + height))
        } else if height > 0.0 {
            ((x1, mid + height), (x2, mid))
        } else {
            ((x1, y1), (x2, mid))
        };
        let rect = [(x1, y1), (x1, y2), (x2, y2), (x2, y1)];
        c.fill_gradient(&rect, (from, colors.1), (to, colors.0));
    }

    /// A LINE as RRDtool draws it: steps from pixel to pixel (or slopes
    /// with `--slope-mode`), broken where the value is unknown.
    pub(super) fn paint_line(
        &self,
        c: &mut dyn Canvas,
        data: &[f64],
        width: f64,
        color: Color,
        dashes: Option<&[f64]>,
    ) {
        let xo = self.xorigin as f64;
        let xsize = self.xsize.max(0) as usize;
        // Every stretch of known values is a subpath of one stroke.
        let mut lines: Vec<Vec<(f64, f64)>> = Vec::new();
        let mut path: Vec<(f64, f64)> = Vec::new();
        let mut last_y = 0.0;
        let fit = |x: f64, y: f64| self.line_fit(x, y, width);
        for ii in 1..xsize {
            if data[ii].is_nan() || (self.o.slope_mode && data[ii - 1].is_nan()) {
                if !path.is_empty() {
                    lines.push(std::mem::take(&mut path));
                }
                continue;
            }
            let x = ii as f64 + xo;
            if path.is_empty() {
                last_y = self.ytr(data[ii]);
                if !self.o.slope_mode {
                    path.push(fit(x - 1.0, last_y));
                } else {
                    path.push(fit(x - 1.0, self.ytr(data[ii - 1])));
                }
                path.push(fit(x, last_y));
            } else {
                let y1 = self.ytr(data[ii]);
                if !self.o.slope_mode && !almost_equal(y1, last_y, 4) {
                    path.push(fit(x - 1.0, y1));
                }
                last_y = y1;
                path.push(fit(x, y1));
            }
        }
        if !path.is_empty() {
            lines.push(path);
        }
        c.stroke(&lines, width, color, dashes.map(|d| (d, 0.0)), true);
    }
}

pub(super) fn simplify(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(points.len());
    for &p in points {
        if out.last() == Some(&p) {
            continue;
        }
        if out.len() >= 2 {
            let (a, b) = (out[out.len() - 2], out[out.len() - 1]);
            let same_row = a.1 == b.1 && b.1 == p.1 && (a.0 - b.0) * (b.0 - p.0) > 0.0;
            let same_col = a.0 == b.0 && b.0 == p.0 && (a.1 - b.1) * (b.1 - p.1) > 0.0;
            if same_row || same_col {
                out.pop();
            }
        }
        out.push(p);
    }
    out
}
