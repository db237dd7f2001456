//! The plotted data (`data_proc`, `si_unit`, `expand_range`): each LINE
//! and AREA sampled per pixel column, stacks summed, and the y range the
//! values and the options make.

use super::*;

impl Image<'_> {
    /// What a LINE/AREA plots, its variable looked up once (not once per
    /// pixel: a graph may have thousands of them).
    pub(super) fn plot_source<'d>(data: &'d Evaluation, value: &ValueRef, yrule: f64) -> PlotSource<'d> {
        if !yrule.is_nan() {
            return PlotSource::Constant(yrule);
        }
        let ValueRef::Var(name) = value else { return PlotSource::Constant(f64::NAN) };
        match data.get(name) {
            Some(Variable::Value(v)) => PlotSource::Constant(v.value),
            Some(Variable::Series(s)) => PlotSource::Series(s),
            None => PlotSource::Constant(f64::NAN),
        }
    }

    /// The value of a LINE/AREA at graph time `t`.
    pub(super) fn plot_value(source: &PlotSource, t: i64) -> f64 {
        match *source {
            PlotSource::Constant(v) => v,
            PlotSource::Series(s) => {
                if t >= s.start && t < s.end && s.step_secs > 0 {
                    let row = ((t - s.start) as f64 / s.step_secs as f64).floor() as usize;
                    s.values.get(row).copied().unwrap_or(f64::NAN)
                } else {
                    f64::NAN
                }
            }
        }
    }

    /// RRDtool's `data_proc`: one (stacked) value per pixel for every LINE
    /// and AREA, and the y range from them and the limits.
    pub(super) fn data_proc(&mut self, data: &Evaluation) {
        let o = self.o;
        let pixstep = (self.end - self.start) as f64 / self.xsize as f64;
        let xsize = self.xsize.max(0) as usize;
        let (mut minval, mut maxval) = (f64::NAN, f64::NAN);
        let mut sources = Vec::with_capacity(self.items.len());
        for item in &mut self.items {
            if let Kind::Plot(p) = &item.el.kind {
                item.p_data = vec![f64::NAN; xsize + 1];
                sources.push(Self::plot_source(data, &p.value, item.yrule));
            } else {
                sources.push(PlotSource::Constant(f64::NAN));
            }
        }
        for i in 0..xsize {
            let gr_time = (self.start as f64 + pixstep * i as f64) as u64 as i64;
            let mut paintval = 0.0;
            for (item, source) in self.items.iter_mut().zip(&sources) {
                let Kind::Plot(p) = &item.el.kind else { continue };
                if !p.stack {
                    paintval = 0.0;
                }
                let value = Self::plot_value(source, gr_time);
                if !value.is_nan() {
                    paintval += value;
                    item.p_data[i] = paintval;
                    if paintval.is_finite() && !p.skip_scale {
                        if (minval.is_nan() || paintval < minval) && !(o.logarithmic && paintval <= 0.0) {
                            minval = paintval;
                        }
                        if maxval.is_nan() || paintval > maxval {
                            maxval = paintval;
                        }
                    }
                } else {
                    item.p_data[i] = f64::NAN;
                }
            }
        }
        if o.logarithmic {
            if minval.is_nan() || maxval.is_nan() || maxval <= 0.0 {
                minval = 0.0;
                maxval = 5.1;
            }
            if minval <= 0.0 {
                minval = maxval / 10e8;
            }
        } else if minval.is_nan() || maxval.is_nan() {
            minval = 0.0;
            maxval = 1.0;
        }
        if self.minval.is_nan() || (!o.rigid && self.minval > minval) {
            self.minval = if o.logarithmic { minval / 2.0 } else { minval };
        }
        if self.maxval.is_nan() || (!o.rigid && self.maxval < maxval) {
            self.maxval = if o.logarithmic { maxval * 2.0 } else { maxval };
        }
        // --allow-shrink: rigid limits may close in on the data.
        if !self.minval.is_nan() && o.rigid && o.allow_shrink && self.minval < minval {
            self.minval = if o.logarithmic { minval / 2.0 } else { minval };
        }
        if !self.maxval.is_nan() && o.rigid && o.allow_shrink && self.maxval > maxval {
            self.maxval = if o.logarithmic { maxval * 2.0 } else { maxval };
        }
        if self.minval > self.maxval {
            self.minval = if self.minval > 0.0 { 0.99 * self.maxval } else { 1.01 * self.maxval };
        }
        if almost_equal(self.minval, self.maxval, 4) {
            if self.maxval > 0.0 {
                self.maxval *= 1.01;
            } else {
                self.maxval *= 0.99;
            }
            if almost_equal(self.maxval, 0.0, 4) {
                self.maxval = 1.0;
            }
        }
    }

    /// RRDtool's `si_unit`: the magnitude of the axis and its SI prefix.
    pub(super) fn si_unit(&mut self) {
        const SYMBOLS: [char; 17] =
            ['y', 'z', 'a', 'f', 'p', 'n', 'u', 'm', ' ', 'k', 'M', 'G', 'T', 'P', 'E', 'Z', 'Y'];
        let base = self.o.base as f64;
        let digits = (self.minval.abs().max(self.maxval.abs()).ln() / base.ln()).floor();
        let viewdigits = match self.o.units_exponent {
            Some(e) => f64::from(e / 3),
            None => digits,
        };
        self.magfact = base.powf(digits);
        self.viewfactor = self.magfact / base.powf(viewdigits);
        let idx = viewdigits + 8.0;
        self.symbol = if (0.0..17.0).contains(&idx) { SYMBOLS[idx as usize] } else { '?' };
    }

    /// RRDtool's `expand_range`: limits moved to sensible round values.
    pub(super) fn expand_range(&mut self) {
        const SENSIBLE: [f64; 48] = [
            1000.0, 900.0, 800.0, 750.0, 700.0, 600.0, 500.0, 400.0, 300.0, 250.0, 200.0, 125.0, 100.0, 90.0,
            80.0, 75.0, 70.0, 60.0, 50.0, 40.0, 30.0, 25.0, 20.0, 10.0, 9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.5,
            3.0, 2.5, 2.0, 1.8, 1.5, 1.2, 1.0, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0, -1.0,
        ];
        let o = self.o;
        if let Some((step, fact)) = o.y_grid {
            // Limits on whole label intervals of the --y-grid.
            let unit = fact as f64 * step;
            self.minval = unit * (self.minval / unit).floor();
            self.maxval = unit * (self.maxval / unit).ceil();
        } else if o.alt_autoscale {
            let delt = self.maxval - self.minval;
            let mut adj = delt * 0.1;
            let fact = 2.0
                * 10f64.powf((self.minval.abs().max(self.maxval.abs()) / self.magfact).log10().floor() - 2.0);
            if delt < fact {
                adj = (fact - delt) * 0.55;
            }
            self.minval -= adj;
            self.maxval += adj;
        } else if o.alt_autoscale_min {
            self.minval -= (self.maxval - self.minval) * 0.1;
        } else if o.alt_autoscale_max {
            self.maxval += (self.maxval - self.minval) * 0.1;
        } else {
            let scaled_min = self.minval / self.magfact;
            let scaled_max = self.maxval / self.magfact;
            let mut i = 1;
            while SENSIBLE[i] > 0.0 {
                let (hi, lo) = (SENSIBLE[i - 1], SENSIBLE[i]);
                if hi >= scaled_min && lo <= scaled_min {
                    self.minval = lo * self.magfact;
                }
                if -hi <= scaled_min && -lo >= scaled_min {
                    self.minval = -hi * self.magfact;
                }
                if hi >= scaled_max && lo <= scaled_max {
                    self.maxval = hi * self.magfact;
                }
                if -hi <= scaled_max && -lo >= scaled_max {
                    self.maxval = -lo * self.magfact;
                }
                i += 1;
            }
        }
    }
}
