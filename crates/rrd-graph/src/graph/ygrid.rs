//! The y grid's choice (`calc_horizontal_grid`, `--alt-y-grid`) and the
//! labels of the left and right axes.

use super::*;

impl Image<'_> {
    /// RRDtool's `calc_horizontal_grid` (classic grid): grid step and
    /// label factor. False when the range cannot carry a grid.
    pub(super) fn calc_horizontal_grid(&mut self) -> bool {
        const YLAB: [(f64, [i64; 4]); 12] = [
            (0.1, [1, 2, 5, 10]),
            (0.2, [1, 5, 10, 20]),
            (0.5, [1, 2, 4, 10]),
            (1.0, [1, 2, 5, 10]),
            (2.0, [1, 5, 10, 20]),
            (5.0, [1, 2, 4, 10]),
            (10.0, [1, 2, 5, 10]),
            (20.0, [1, 5, 10, 20]),
            (50.0, [1, 2, 4, 10]),
            (100.0, [1, 2, 5, 10]),
            (200.0, [1, 5, 10, 20]),
            (500.0, [1, 2, 4, 10]),
        ];
        self.labfact = 2;
        let range = self.maxval - self.minval;
        let scaledrange = range / self.magfact;
        if scaledrange.is_nan() {
            return false;
        }
        if let Some((step, fact)) = self.o.y_grid {
            self.gridstep = step;
            self.labfact = fact;
            return true;
        }
        if self.o.alt_y_grid {
            self.alt_y_grid(range);
            return true;
        }
        let mut pixel = 1_i64;
        let mut gridind = 0;
        for (i, (grid, _)) in YLAB.iter().enumerate() {
            pixel = c_int(self.ysize as f64 / (scaledrange / grid)) as i64;
            gridind = i;
            if pixel >= 5 {
                break;
            }
        }
        for f in YLAB[gridind].1 {
            if (pixel * f) as f64 >= 1.8 * self.pt(TextProp::Axis) {
                self.labfact = f;
                break;
            }
        }
        self.gridstep = YLAB[gridind].0 * self.magfact;
        true
    }

    /// `--alt-y-grid`: a decimal grid step with 5 to 15 lines and a label
    /// format with as many decimals as the step needs.
    pub(super) fn alt_y_grid(&mut self, range: f64) {
        let (vf, mf) = (self.viewfactor, self.magfact);
        let mut decimals = c_int((self.maxval.abs().max(self.minval.abs()) * vf / mf).log10().ceil());
        if decimals <= 0 {
            decimals = 1;
        }
        let mut step = 10f64.powf((range * vf / mf).log10().floor()) / vf * mf;
        if step == 0.0 {
            step = 0.1;
        }
        if range / step < 5.0 && step >= 30.0 {
            step /= 10.0;
        }
        if range / step > 15.0 {
            step *= 10.0;
        }
        if range / step > 5.0 {
            self.labfact = 1;
            if range / step > 8.0 || step < 1.8 * self.pt(TextProp::Axis) {
                self.labfact = 2;
            }
        } else {
            step /= 5.0;
            self.labfact = 5;
        }
        self.gridstep = step;
        let fractionals = c_int((step * self.labfact as f64 * vf / mf).log10().floor());
        let (width, precision) = if fractionals < 0 {
            (i64::from(decimals) - i64::from(fractionals) + 1, (-i64::from(fractionals)) as usize)
        } else {
            (i64::from(decimals) + 1, 0)
        };
        self.alt_label = Some((width.clamp(0, 4096) as usize, precision.min(4096)));
    }

    /// The left axis label of grid line `i` (value `v` as scaled for the axis).
    pub(super) fn y_label(&self, i: i64, v: f64, max_y: f64) -> String {
        let o = self.o;
        match o.left_axis_formatter {
            AxisFormatter::Timestamp => {
                return crate::labels::timestamp_label(self.gridstep * i as f64, &o.left_axis_format)
            }
            AxisFormatter::Duration => {
                return crate::labels::duration_label(self.gridstep * i as f64, &o.left_axis_format)
            }
            AxisFormatter::Numeric => {}
        }
        let sisym = if i == 0 { ' ' } else { self.symbol };
        if !o.left_axis_format.is_empty() {
            // Checked when the options were read; the symbol is not printed.
            return crate::labels::axis_format(&o.left_axis_format)
                .map(|f| f.format(v, ""))
                .unwrap_or_default();
        }
        let mut label = if let Some((width, precision)) = self.alt_label {
            rrd_lang::cformat::printf(
                v,
                rrd_lang::cformat::Conversion { flag: None, width, precision: Some(precision), conv: 'f' },
            )
        } else {
            let decimals =
                max_y < 10.0 || self.gridstep / self.magfact * self.viewfactor * (self.labfact as f64) < 1.0;
            if decimals {
                format!("{v:4.1}")
            } else {
                format!("{v:4.0}")
            }
        };
        if self.symbol != ' ' {
            label.push(' ');
            label.push(sisym);
        }
        label
    }

    /// The right axis label of grid line `i` (`--right-axis`).
    pub(super) fn y_label_right(
        &self,
        i: i64,
        sgrid: i64,
        egrid: i64,
        max_y: f64,
        magfact: &mut Option<(f64, &'static str)>,
    ) -> String {
        let o = self.o;
        let Some((scale, shift)) = o.right_axis else { return String::new() };
        let sval = self.gridstep * i as f64 * scale + shift;
        match o.right_axis_formatter {
            AxisFormatter::Timestamp => crate::labels::timestamp_label(sval, &o.right_axis_format),
            AxisFormatter::Duration => crate::labels::duration_label(sval, &o.right_axis_format),
            AxisFormatter::Numeric => {
                if !o.right_axis_format.is_empty() {
                    return crate::labels::axis_format(&o.right_axis_format)
                        .map(|f| f.format(sval, ""))
                        .unwrap_or_default();
                }
                let (mag, symb) = *magfact.get_or_insert_with(|| {
                    let mid = self.gridstep * (sgrid + egrid) as f64 / 2.0 * scale + shift;
                    let (_, symb, mag) = auto_scale(mid, self.o.base as f64);
                    (mag, symb)
                });
                let v = sval / mag;
                if max_y < 10.0 {
                    format!("{v:5.1} {symb}")
                } else {
                    format!("{v:5.0} {symb}")
                }
            }
        }
    }
}
