//! RRDtool's AT-style time specifications (`-1d`, `noon yesterday`,
//! `end-2h`, `20100101`, `jan 1 2010 12:00`, ...), as `fetch`, `xport`,
//! `graph` and `create --start` read them.
//!
//! What this module owns:
//! - [`parse`]: the grammar of rrdtool 1.7.2's `rrd_parsetime`, token for
//!   token, including its quirks (a bare `yesterday` is refused, `1 jan 2010`
//!   means hour 1 of day 2010 of January in the year 30000, `-5m` is five
//!   months but `-6m` six minutes, an unknown unit word counts as seconds,
//!   anything after a character the scanner does not know is ignored).
//! - [`resolve_start_end`]: rrdtool's `rrd_proc_start_end`, where a start may
//!   be given relative to the end or the end relative to the start.
//! - [`parse_time`]: one spec that may not refer to a start or an end.
//!
//! Invariants: a parsed [`AtTime`] does not depend on the clock. rrdtool
//! reads the clock while parsing and edits the fields of `localtime(now)`;
//! here the parser records those edits as a small program that is replayed
//! on `localtime(now)` when the time is resolved, so the same `now` gives
//! the same answer rrdtool gives. Calendar arithmetic (days, weeks, months,
//! years, dates, weekdays) edits the broken-down time and goes through the C
//! library's `mktime` in the process time zone, so DST and `TZ` behave as in
//! rrdtool; hours, minutes and seconds are added as plain seconds afterwards.
//! Untrusted input never panics: integer overflow wraps as the C code's
//! `int` arithmetic does on the platforms rrdtool is built for.
//!
//! What it deliberately does not do: command-specific range checks such as
//! graph's "the first entry to fetch should be after 1980" or fetch's "start
//! should be less than end"; `rrd_proc_start_end` does not check them, so
//! its callers do. Where `localtime` of the clock or of a resolved end or
//! start fails (times beyond year 2^31), rrdtool reads uninitialised or
//! null memory; this module reports [`AtTimeError::OutOfRange`] instead.

use thiserror::Error;

use crate::numparse::{self, is_c_space};

/// A time specification rrdtool would refuse; the messages are rrdtool's.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AtTimeError {
    /// The spec does not start with anything rrdtool knows.
    #[error("unparsable time: {token}{rest}")]
    Unparsable { token: String, rest: String },
    /// A valid spec followed by something that cannot follow it.
    #[error("unparsable trailing text: '...{token}{rest}'")]
    TrailingText { token: String, rest: String },
    #[error("There should be number after '{sign}'")]
    NumberAfterSign { sign: char },
    #[error("Parsing HH:MM syntax, expecting MM as number, got none")]
    MinutesMissing,
    #[error("parsing HH:MM syntax, got MM = {minute} (>59!)")]
    MinutesTooLarge { minute: i32 },
    #[error("there cannot be more than 12 AM or PM hours")]
    HourTooLargeForAmPm,
    #[error("invalid year {year} (should be either 00-99 or >1900)")]
    InvalidYear { year: i32 },
    #[error("won't handle dates before epoch (01/01/1970), sorry")]
    BeforeEpoch,
    #[error("the day of the month should follow month name")]
    DayAfterMonthName,
    /// A `/` or `.` date missing its day, month or year number.
    #[error("there should be {what} number after '{separator}'")]
    NumberAfterSeparator { what: &'static str, separator: char },
    #[error("did you really mean month {month}?")]
    InvalidMonth { month: i32 },
    #[error("I'm afraid that {day} is not a valid day of the month")]
    InvalidDay { day: i32 },
    /// `start`, `end` or `epoch` alone, without an offset.
    #[error("'start' or 'end' MUST be followed by +|- offset")]
    ReferenceWithoutOffset,
    #[error("if 'now' is followed by a token it must be +|- offset")]
    NowFollowedByToken,
    /// `mktime` refused the time, or `localtime` could not express it.
    #[error("the specified time is incorrect (out of range?)")]
    OutOfRange,
    #[error("the start and end times cannot be specified relative to each other")]
    MutualReference,
    #[error("the start time cannot be specified relative to itself")]
    StartRelativeToItself,
    #[error("the end time cannot be specified relative to itself")]
    EndRelativeToItself,
    /// A `start`/`end` reference where only one time is given.
    #[error("specifying time relative to the 'start' or 'end' makes no sense here")]
    RelativeNotAllowed,
    /// The start spec was wrong; rrdtool prefixes such messages this way.
    #[error("start time: {0}")]
    InStart(Box<AtTimeError>),
    /// The end spec was wrong; rrdtool prefixes such messages this way.
    #[error("end time: {0}")]
    InEnd(Box<AtTimeError>),
}

/// What a spec is measured from (rrdtool's `rrd_time_value_t.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtTimeKind {
    /// A date, a time of day, a seconds count or an offset from now.
    Absolute,
    /// `start+...`: only meaningful as an end time.
    RelativeToStart,
    /// `end-...`: only meaningful as a start time.
    RelativeToEnd,
    /// `epoch+...`. rrdtool 1.7.2 measures it from the broken-down time with
    /// all fields zero, which `mktime` reads as 1899-12-31 00:00 local time;
    /// that is reproduced, not corrected.
    RelativeToEpoch,
}

/// A parsed spec: relative to now/absolute, to the start, or to the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtTime {
    kind: AtTimeKind,
    /// Edits of the broken-down time, in the order rrdtool makes them.
    steps: Vec<Step>,
    /// Calendar offsets added to `tm_year`, `tm_mon`, `tm_mday` (C `int`).
    years: i32,
    months: i32,
    days: i32,
    /// Hours, minutes and seconds of the offset, added after `mktime`.
    offset_secs: i64,
}

impl AtTime {
    /// What the spec is measured from.
    pub fn kind(&self) -> AtTimeKind {
        self.kind
    }
}

/// One edit of the broken-down time, replayed on `localtime(now)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Remember hour and year, then set them to values no real time has, so
    /// that a later [`Step::Unmark`] can tell whether anything set them.
    Mark,
    /// Put back the remembered hour and year where they still hold the marks.
    Unmark,
    TimeOfDay {
        hour: i32,
        minute: i32,
    },
    AddDays(i32),
    /// Move to the given weekday (0 = Sunday) of the current week, counted
    /// from the weekday `localtime` gave, as rrdtool does.
    Weekday(i32),
    /// `year` is already a `tm_year`; `None` takes the current `tm_year`
    /// through rrdtool's year rules at resolve time.
    Date {
        mday: i32,
        mon: i32,
        year: Option<i32>,
    },
    /// Replace everything with `localtime(secs)`, DST flag included.
    /// rrdtool ignores a failure; so does this (see [`local_tm_into`]).
    Seconds(i64),
    /// Clear seconds through years (start, end and epoch references).
    Zero,
}

/// The values rrdtool's parser plants in `tm_hour` and `tm_year` while
/// reading a spec that begins with a number.
const HOUR_MARK: i32 = 30;
const YEAR_MARK: i32 = 30000;

/// Numbers above this are seconds since 1970 (ten years of 365 days).
const SECONDS_THRESHOLD: i64 = 10 * 365 * 24 * 60 * 60;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Midnight,
    Noon,
    Teatime,
    Am,
    Pm,
    Yesterday,
    Today,
    Tomorrow,
    Now,
    Start,
    End,
    Epoch,
    Seconds,
    Minutes,
    Hours,
    Days,
    Weeks,
    Months,
    Years,
    /// `m`: months or minutes, decided by context.
    MonthsMinutes,
    /// 0 = January.
    Month(i32),
    /// 0 = Sunday.
    Weekday(i32),
    Number,
    Plus,
    Minus,
    Dot,
    Colon,
    Slash,
    /// A word that is not special in the current context.
    Id,
    /// End of input, or a character the scanner does not know.
    Eof,
}

/// Words of the first part of a spec (everything before the offset).
const WORDS: &[(&str, Tok)] = &[
    ("midnight", Tok::Midnight),
    ("noon", Tok::Noon),
    ("teatime", Tok::Teatime),
    ("am", Tok::Am),
    ("pm", Tok::Pm),
    ("tomorrow", Tok::Tomorrow),
    ("yesterday", Tok::Yesterday),
    ("today", Tok::Today),
    ("now", Tok::Now),
    ("n", Tok::Now),
    ("start", Tok::Start),
    ("s", Tok::Start),
    ("end", Tok::End),
    ("e", Tok::End),
    ("epoch", Tok::Epoch),
    ("jan", Tok::Month(0)),
    ("feb", Tok::Month(1)),
    ("mar", Tok::Month(2)),
    ("apr", Tok::Month(3)),
    ("may", Tok::Month(4)),
    ("jun", Tok::Month(5)),
    ("jul", Tok::Month(6)),
    ("aug", Tok::Month(7)),
    ("sep", Tok::Month(8)),
    ("oct", Tok::Month(9)),
    ("nov", Tok::Month(10)),
    ("dec", Tok::Month(11)),
    ("january", Tok::Month(0)),
    ("february", Tok::Month(1)),
    ("march", Tok::Month(2)),
    ("april", Tok::Month(3)),
    ("june", Tok::Month(5)),
    ("july", Tok::Month(6)),
    ("august", Tok::Month(7)),
    ("september", Tok::Month(8)),
    ("october", Tok::Month(9)),
    ("november", Tok::Month(10)),
    ("december", Tok::Month(11)),
    ("sunday", Tok::Weekday(0)),
    ("sun", Tok::Weekday(0)),
    ("monday", Tok::Weekday(1)),
    ("mon", Tok::Weekday(1)),
    ("tuesday", Tok::Weekday(2)),
    ("tue", Tok::Weekday(2)),
    ("wednesday", Tok::Weekday(3)),
    ("wed", Tok::Weekday(3)),
    ("thursday", Tok::Weekday(4)),
    ("thu", Tok::Weekday(4)),
    ("friday", Tok::Weekday(5)),
    ("fri", Tok::Weekday(5)),
    ("saturday", Tok::Weekday(6)),
    ("sat", Tok::Weekday(6)),
];

/// Words of the offset part; here `mon` is a month, not Monday.
const UNITS: &[(&str, Tok)] = &[
    ("second", Tok::Seconds),
    ("seconds", Tok::Seconds),
    ("sec", Tok::Seconds),
    ("s", Tok::Seconds),
    ("minute", Tok::Minutes),
    ("minutes", Tok::Minutes),
    ("min", Tok::Minutes),
    ("m", Tok::MonthsMinutes),
    ("hour", Tok::Hours),
    ("hours", Tok::Hours),
    ("hr", Tok::Hours),
    ("h", Tok::Hours),
    ("day", Tok::Days),
    ("days", Tok::Days),
    ("d", Tok::Days),
    ("week", Tok::Weeks),
    ("weeks", Tok::Weeks),
    ("wk", Tok::Weeks),
    ("w", Tok::Weeks),
    ("month", Tok::Months),
    ("months", Tok::Months),
    ("mon", Tok::Months),
    ("year", Tok::Years),
    ("years", Tok::Years),
    ("yr", Tok::Years),
    ("y", Tok::Years),
];

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

struct Parser<'a> {
    input: &'a [u8],
    /// Scan position: just after the current token (at an unknown character
    /// when the current token is an `Eof` caused by it).
    pos: usize,
    tok: Tok,
    /// The current token's text (empty at the end of input).
    text: Vec<u8>,
    words: &'static [(&'static str, Tok)],
    steps: Vec<Step>,
    /// Whether `tm_hour` / `tm_year` still hold the marks planted by
    /// [`Step::Mark`]; decides, as in rrdtool, whether a time of day may
    /// follow a date.
    hour_marked: bool,
    year_marked: bool,
    /// The sign last written in the offset; a number without one repeats it.
    minus: bool,
    /// The unit of the previous offset term since the last sign; decides
    /// what `m` means.
    prev_unit: Option<Tok>,
    years: i32,
    months: i32,
    days: i32,
    offset_secs: i64,
}

impl<'a> Parser<'a> {
    fn new(spec: &'a str) -> Parser<'a> {
        Parser {
            input: spec.as_bytes(),
            pos: 0,
            tok: Tok::Eof,
            text: Vec::new(),
            words: WORDS,
            steps: Vec::new(),
            hour_marked: false,
            year_marked: false,
            minus: false,
            prev_unit: None,
            years: 0,
            months: 0,
            days: 0,
            offset_secs: 0,
        }
    }

    /// Reads the next token. Blanks, `_` and `,` separate tokens; runs of
    /// digits and of letters are tokens; a character outside the grammar
    /// ends the input there (rrdtool ignores whatever follows it).
    fn next(&mut self) {
        let input = self.input;
        while self.pos < input.len()
            && (is_c_space(input[self.pos]) || matches!(input[self.pos], b'_' | b','))
        {
            self.pos += 1;
        }
        self.text.clear();
        let Some(&first) = input.get(self.pos) else {
            self.tok = Tok::Eof;
            return;
        };
        self.text.push(first);
        self.pos += 1;
        if first.is_ascii_digit() || first.is_ascii_alphabetic() {
            let alike =
                |c: &u8| if first.is_ascii_digit() { c.is_ascii_digit() } else { c.is_ascii_alphabetic() };
            while let Some(&c) = input.get(self.pos).filter(|c| alike(c)) {
                self.text.push(c);
                self.pos += 1;
            }
            self.tok = if first.is_ascii_digit() {
                Tok::Number
            } else {
                self.words
                    .iter()
                    .find(|(name, _)| name.as_bytes().eq_ignore_ascii_case(&self.text))
                    .map_or(Tok::Id, |&(_, tok)| tok)
            };
            return;
        }
        self.tok = match first {
            b':' => Tok::Colon,
            b'.' => Tok::Dot,
            b'+' => Tok::Plus,
            b'-' => Tok::Minus,
            b'/' => Tok::Slash,
            _ => {
                self.pos -= 1;
                Tok::Eof
            }
        };
    }

    fn token_and_rest(&self) -> (String, String) {
        (lossy(&self.text), lossy(&self.input[self.pos..]))
    }

    fn atoi(&self) -> i32 {
        numparse::atoi(&self.text)
    }

    fn atol(&self) -> i64 {
        numparse::atol(&self.text)
    }

    fn parse(mut self) -> Result<AtTime, AtTimeError> {
        let mut kind = AtTimeKind::Absolute;
        self.next();
        match self.tok {
            Tok::Plus | Tok::Minus => {}
            Tok::Epoch | Tok::Start | Tok::End | Tok::Now => {
                let is_now = self.tok == Tok::Now;
                if !is_now {
                    kind = match self.tok {
                        Tok::Epoch => AtTimeKind::RelativeToEpoch,
                        Tok::Start => AtTimeKind::RelativeToStart,
                        _ => AtTimeKind::RelativeToEnd,
                    };
                    self.steps.push(Step::Zero);
                }
                self.next();
                if !matches!(self.tok, Tok::Plus | Tok::Minus) {
                    if !is_now {
                        return Err(AtTimeError::ReferenceWithoutOffset);
                    }
                    if self.tok != Tok::Eof {
                        return Err(AtTimeError::NowFollowedByToken);
                    }
                }
            }
            Tok::Number => {
                self.steps.push(Step::Mark);
                self.hour_marked = true;
                self.year_marked = true;
                self.time_of_day()?;
                self.day()?;
                // A date that came without a time may be followed by one.
                if self.hour_marked && !self.year_marked {
                    self.time_of_day()?;
                }
                self.steps.push(Step::Unmark);
            }
            Tok::Month(_) => {
                self.day()?;
                if self.tok == Tok::Number {
                    self.time_of_day()?;
                }
            }
            Tok::Midnight | Tok::Noon | Tok::Teatime => {
                let hour = match self.tok {
                    Tok::Midnight => 0,
                    Tok::Noon => 12,
                    _ => 16,
                };
                self.steps.push(Step::TimeOfDay { hour, minute: 0 });
                self.next();
                self.day()?;
            }
            _ => {
                let (token, rest) = self.token_and_rest();
                return Err(AtTimeError::Unparsable { token, rest });
            }
        }

        if matches!(self.tok, Tok::Plus | Tok::Minus) {
            self.words = UNITS;
            while matches!(self.tok, Tok::Plus | Tok::Minus | Tok::Number) {
                let sign = match self.tok {
                    Tok::Number => None,
                    tok => Some(tok == Tok::Minus),
                };
                self.offset_term(sign)?;
                self.next();
            }
        }
        if self.tok != Tok::Eof {
            let (token, rest) = self.token_and_rest();
            return Err(AtTimeError::TrailingText { token, rest });
        }
        Ok(AtTime {
            kind,
            steps: self.steps,
            years: self.years,
            months: self.months,
            days: self.days,
            offset_secs: self.offset_secs,
        })
    }

    /// Reads `HH`, `HH:MM`, either followed by `am`/`pm`, when the current
    /// token is a number of at most two characters. Leaves the input as it
    /// was when the number turns out to start a date (`12/25`, `18.01.2010`)
    /// or is no hour (`25`). Like rrdtool, it looks only at the length of the
    /// current token's text, whatever the token is.
    fn time_of_day(&mut self) -> Result<(), AtTimeError> {
        if self.text.len() > 2 {
            return Ok(());
        }
        let mut hour = self.atoi();
        let saved = (self.pos, self.tok);
        let restore = |p: &mut Parser<'_>, hour: i32| {
            (p.pos, p.tok) = saved;
            p.text = hour.to_string().into_bytes();
        };
        self.next();
        if matches!(self.tok, Tok::Slash | Tok::Dot) {
            restore(self, hour);
            return Ok(());
        }
        let mut minute = 0;
        if self.tok == Tok::Colon {
            self.next();
            if self.tok != Tok::Number {
                return Err(AtTimeError::MinutesMissing);
            }
            minute = self.atoi();
            if minute > 59 {
                return Err(AtTimeError::MinutesTooLarge { minute });
            }
            self.next();
        }
        if matches!(self.tok, Tok::Am | Tok::Pm) {
            if hour > 12 {
                return Err(AtTimeError::HourTooLargeForAmPm);
            }
            // 12 am is midnight and 12 pm is noon.
            if self.tok == Tok::Pm {
                if hour != 12 {
                    hour += 12;
                }
            } else if hour == 12 {
                hour = 0;
            }
            self.next();
        } else if hour > 23 {
            restore(self, hour);
            return Ok(());
        }
        self.steps.push(Step::TimeOfDay { hour, minute });
        self.hour_marked = false;
        Ok(())
    }

    /// Reads a day: `yesterday`/`today`/`tomorrow`, a weekday, a month name
    /// with day and optional year, a seconds count, `YYYYMMDD`,
    /// `MM/DD[/YY[YY]]` or `DD.MM[.YY[YY]]`. Anything else is left alone.
    fn day(&mut self) -> Result<(), AtTimeError> {
        match self.tok {
            Tok::Yesterday => {
                self.steps.push(Step::AddDays(-1));
                self.next();
            }
            Tok::Today => self.next(),
            Tok::Tomorrow => {
                self.steps.push(Step::AddDays(1));
                self.next();
            }
            Tok::Weekday(wday) => {
                self.steps.push(Step::Weekday(wday));
                self.next();
            }
            Tok::Month(mon) => {
                self.next();
                if self.tok != Tok::Number {
                    return Err(AtTimeError::DayAfterMonthName);
                }
                let mday = self.atol();
                self.next();
                let year = if self.tok == Tok::Number {
                    let year = self.atol();
                    self.next();
                    Some(year)
                } else {
                    None
                };
                // rrdtool does not check the day here.
                self.date(mday, i64::from(mon), year)?;
            }
            Tok::Number => {
                let value = self.atol();
                if value > SECONDS_THRESHOLD {
                    self.steps.push(Step::Seconds(value));
                    self.hour_marked = false;
                    self.year_marked = false;
                    self.next();
                    return Ok(());
                }
                let (mut mon, mut mday, mut year) = (value, 0, None);
                if value > 19_700_101 && value < 24_000_101 {
                    // YYYYMMDD, cut by character position as rrdtool does.
                    let field = |from: usize, to: usize| {
                        let text = &self.text;
                        numparse::atol(&text[from.min(text.len())..to.min(text.len())])
                    };
                    year = Some(field(0, 4));
                    mon = field(4, 6);
                    mday = field(6, 8);
                    self.next();
                } else {
                    self.next();
                    if value <= 31 && matches!(self.tok, Tok::Slash | Tok::Dot) {
                        let separator_tok = self.tok;
                        let (separator, what) =
                            if separator_tok == Tok::Dot { ('.', "month") } else { ('/', "day") };
                        self.next();
                        if self.tok != Tok::Number {
                            return Err(AtTimeError::NumberAfterSeparator { what, separator });
                        }
                        mday = self.atol();
                        self.next();
                        if self.tok == separator_tok {
                            self.next();
                            if self.tok != Tok::Number {
                                return Err(AtTimeError::NumberAfterSeparator { what: "year", separator });
                            }
                            year = Some(self.atol());
                            self.next();
                        }
                        // DD.MM is the European order.
                        if separator_tok == Tok::Dot {
                            std::mem::swap(&mut mon, &mut mday);
                        }
                    }
                }
                mon -= 1;
                if !(0..=11).contains(&mon) {
                    return Err(AtTimeError::InvalidMonth { month: (mon + 1) as i32 });
                }
                if !(1..=31).contains(&mday) {
                    return Err(AtTimeError::InvalidDay { day: mday as i32 });
                }
                self.date(mday, mon, year)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// Records a date. A given year is checked now, so that its error comes
    /// where rrdtool reports it; a missing year is the current `tm_year`,
    /// known only when the time is resolved.
    fn date(&mut self, mday: i64, mon: i64, year: Option<i64>) -> Result<(), AtTimeError> {
        let year = match year {
            Some(year) => Some(tm_year_of(year)? as i32),
            None => None,
        };
        // The current year is the mark when a date follows a number (it then
        // becomes 28100, no longer the mark); elsewhere the flag is unused.
        self.year_marked = year == Some(YEAR_MARK);
        self.steps.push(Step::Date { mday: mday as i32, mon: mon as i32, year });
        Ok(())
    }

    /// Reads one `NUMBER UNIT` term of the offset; `sign` is `None` when the
    /// number came without one (`-1d2h`), which repeats the last sign.
    fn offset_term(&mut self, sign: Option<bool>) -> Result<(), AtTimeError> {
        if let Some(minus) = sign {
            self.minus = minus;
            self.next();
            if self.tok != Tok::Number {
                return Err(AtTimeError::NumberAfterSign { sign: if minus { '-' } else { '+' } });
            }
            self.prev_unit = None;
        }
        let delta = self.atoi();
        self.next();
        let mut unit = self.tok;
        if unit == Tok::MonthsMinutes {
            unit = match self.prev_unit {
                Some(Tok::Days | Tok::Weeks | Tok::Months | Tok::Years) => Tok::Months,
                Some(Tok::Seconds | Tok::Minutes | Tok::Hours) => Tok::Minutes,
                // rrdtool 1.7.2 takes 1..5m as months, 6m and up as minutes
                // (its documentation says 25; the code says 6).
                _ if delta < 6 => Tok::Months,
                _ => Tok::Minutes,
            };
        }
        self.prev_unit = Some(unit);
        let signed = |v: i32| if self.minus { v.wrapping_neg() } else { v };
        let add_secs =
            |p: &mut Parser<'_>, secs: i32| p.offset_secs = p.offset_secs.wrapping_add(i64::from(secs));
        match unit {
            Tok::Years => self.years = self.years.wrapping_add(signed(delta)),
            Tok::Months => self.months = self.months.wrapping_add(signed(delta)),
            Tok::Weeks => self.days = self.days.wrapping_add(signed(delta.wrapping_mul(7))),
            Tok::Days => self.days = self.days.wrapping_add(signed(delta)),
            Tok::Hours => add_secs(self, signed(delta.wrapping_mul(3600))),
            Tok::Minutes => add_secs(self, signed(delta.wrapping_mul(60))),
            // Seconds, and whatever token followed the number: rrdtool
            // counts an unknown or missing unit as seconds and consumes it.
            _ => add_secs(self, signed(delta)),
        }
        Ok(())
    }
}

/// rrdtool's year rules: 00-37 are 2000-2037, 38-138 are 1938-2038 (as
/// `tm_year`), above 1970 a full year; the result is a `tm_year`.
fn tm_year_of(year: i64) -> Result<i64, AtTimeError> {
    let mut year = year;
    if year > 138 {
        if year > 1970 {
            year -= 1900;
        } else {
            return Err(AtTimeError::InvalidYear { year: year as i32 });
        }
    } else if (0..38).contains(&year) {
        year += 100;
    }
    if year < 70 {
        return Err(AtTimeError::BeforeEpoch);
    }
    Ok(year)
}

/// Parses an AT-style time specification without looking at the clock.
pub fn parse(spec: &str) -> Result<AtTime, AtTimeError> {
    Parser::new(spec).parse()
}

use crate::ctime::{localtime as local_tm, localtime_into as local_tm_into, mktime as mk_time};

impl AtTime {
    /// Replays the recorded edits on `localtime(now)` and returns the
    /// broken-down time rrdtool's parser would have produced (normalised by
    /// `mktime` for absolute times, whose failure is an error as in rrdtool).
    fn broken_down(&self, now: i64) -> Result<libc::tm, AtTimeError> {
        let mut tm = local_tm(now).ok_or(AtTimeError::OutOfRange)?;
        tm.tm_isdst = -1; // let mktime work out DST
        let (mut saved_hour, mut saved_year) = (tm.tm_hour, tm.tm_year);
        for step in &self.steps {
            match *step {
                Step::Mark => {
                    (saved_hour, saved_year) = (tm.tm_hour, tm.tm_year);
                    tm.tm_hour = HOUR_MARK;
                    tm.tm_year = YEAR_MARK;
                }
                Step::Unmark => {
                    if tm.tm_hour == HOUR_MARK {
                        tm.tm_hour = saved_hour;
                    }
                    if tm.tm_year == YEAR_MARK {
                        tm.tm_year = saved_year;
                    }
                }
                Step::TimeOfDay { hour, minute } => {
                    tm.tm_hour = hour;
                    tm.tm_min = minute;
                    tm.tm_sec = 0;
                }
                Step::AddDays(days) => tm.tm_mday = tm.tm_mday.wrapping_add(days),
                Step::Weekday(wday) => tm.tm_mday = tm.tm_mday.wrapping_add(wday.wrapping_sub(tm.tm_wday)),
                Step::Date { mday, mon, year } => {
                    let year = match year {
                        Some(year) => year,
                        None => tm_year_of(i64::from(tm.tm_year))? as i32,
                    };
                    tm.tm_mday = mday;
                    tm.tm_mon = mon;
                    tm.tm_year = year;
                }
                Step::Seconds(secs) => local_tm_into(secs, &mut tm),
                Step::Zero => {
                    tm.tm_sec = 0;
                    tm.tm_min = 0;
                    tm.tm_hour = 0;
                    tm.tm_mday = 0;
                    tm.tm_mon = 0;
                    tm.tm_year = 0;
                }
            }
        }
        tm.tm_year = tm.tm_year.wrapping_add(self.years);
        tm.tm_mon = tm.tm_mon.wrapping_add(self.months);
        tm.tm_mday = tm.tm_mday.wrapping_add(self.days);
        if self.kind == AtTimeKind::Absolute && mk_time(&mut tm) == -1 {
            // Also what a time that DST skips can come to on some systems.
            return Err(AtTimeError::OutOfRange);
        }
        Ok(tm)
    }
}

/// Adds a relative spec's calendar fields to `base` seconds and its seconds
/// offset after `mktime`, as rrdtool does for `end-1d` and `start+2h`.
/// `base`'s DST flag is kept, as rrdtool keeps it.
fn shifted(base: i64, relative_tm: &libc::tm, relative: &AtTime) -> Option<i64> {
    let mut tm = local_tm(base)?;
    tm.tm_mday = tm.tm_mday.wrapping_add(relative_tm.tm_mday);
    tm.tm_mon = tm.tm_mon.wrapping_add(relative_tm.tm_mon);
    tm.tm_year = tm.tm_year.wrapping_add(relative_tm.tm_year);
    Some(mk_time(&mut tm).wrapping_add(relative.offset_secs))
}

/// rrdtool's `rrd_proc_start_end`: resolves a start and end spec (start may
/// say `end-1d`, end may say `start+2h`) at time `now` (epoch seconds).
///
/// Errors: either spec out of range (wrapped in [`AtTimeError::InStart`] or
/// [`AtTimeError::InEnd`]), both referring to each other, or either
/// referring to itself. Like rrdtool, it does not require start <= end;
/// the commands check that themselves.
pub fn resolve_start_end(start: &AtTime, end: &AtTime, now: i64) -> Result<(i64, i64), AtTimeError> {
    let in_start = |e| AtTimeError::InStart(Box::new(e));
    let in_end = |e| AtTimeError::InEnd(Box::new(e));
    // rrdtool parses (and so range-checks) both before relating them.
    let mut start_tm = start.broken_down(now).map_err(in_start)?;
    let mut end_tm = end.broken_down(now).map_err(in_end)?;
    if start.kind == AtTimeKind::RelativeToEnd && end.kind == AtTimeKind::RelativeToStart {
        return Err(AtTimeError::MutualReference);
    }
    if start.kind == AtTimeKind::RelativeToStart {
        return Err(AtTimeError::StartRelativeToItself);
    }
    if end.kind == AtTimeKind::RelativeToEnd {
        return Err(AtTimeError::EndRelativeToItself);
    }
    let start_secs = if start.kind == AtTimeKind::RelativeToEnd {
        let end_secs = mk_time(&mut end_tm).wrapping_add(end.offset_secs);
        shifted(end_secs, &start_tm, start).ok_or(in_end(AtTimeError::OutOfRange))?
    } else {
        mk_time(&mut start_tm).wrapping_add(start.offset_secs)
    };
    let end_secs = if end.kind == AtTimeKind::RelativeToStart {
        shifted(start_secs, &end_tm, end).ok_or(in_start(AtTimeError::OutOfRange))?
    } else {
        mk_time(&mut end_tm).wrapping_add(end.offset_secs)
    };
    Ok((start_secs, end_secs))
}

/// Parses both specs and resolves them, prefixing parse errors with
/// `start time: ` or `end time: ` as `fetch`, `xport` and `graph` do.
pub fn parse_start_end(start: &str, end: &str, now: i64) -> Result<(i64, i64), AtTimeError> {
    let start = parse(start).map_err(|e| AtTimeError::InStart(Box::new(e)))?;
    let end = parse(end).map_err(|e| AtTimeError::InEnd(Box::new(e)))?;
    resolve_start_end(&start, &end, now)
}

/// Convenience: parse and resolve a single absolute spec (no start/end
/// reference allowed), as `create --start` does.
pub fn parse_time(spec: &str, now: i64) -> Result<i64, AtTimeError> {
    let at = parse(spec)?;
    if matches!(at.kind, AtTimeKind::RelativeToStart | AtTimeKind::RelativeToEnd) {
        return Err(AtTimeError::RelativeNotAllowed);
    }
    let mut tm = at.broken_down(now)?;
    Ok(mk_time(&mut tm).wrapping_add(at.offset_secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::sync::Once;

    /// 2021-06-15 10:20:30 UTC, a Tuesday.
    const NOW: i64 = 1_623_752_430;
    const HOUR: i64 = 3600;
    const DAY: i64 = 86_400;

    /// Every in-process test runs in UTC; other zones run in a child
    /// process (see `differential_other_zones`), so TZ is never changed
    /// under a running test.
    fn utc() {
        static SET: Once = Once::new();
        SET.call_once(|| {
            if std::env::var("TZ").as_deref() != Ok("UTC") {
                std::env::set_var("TZ", "UTC");
            }
            crate::ctime::reset_timezone();
        });
    }

    fn at(spec: &str) -> i64 {
        utc();
        parse_time(spec, NOW).unwrap_or_else(|e| panic!("{spec:?} failed: {e}"))
    }

    fn err(spec: &str) -> String {
        utc();
        match parse_time(spec, NOW) {
            Ok(t) => panic!("{spec:?} should fail, gave {t}"),
            Err(e) => e.to_string(),
        }
    }

    fn pair(start: &str, end: &str) -> Result<(i64, i64), String> {
        utc();
        parse_start_end(start, end, NOW).map_err(|e| e.to_string())
    }

    #[test]
    fn seconds_and_now() {
        assert_eq!(at("1000000000"), 1_000_000_000);
        assert_eq!(at("now"), NOW);
        assert_eq!(at("n"), NOW);
        assert_eq!(at("NOW"), NOW);
        assert_eq!(at("  now  "), NOW);
        // A number above ten years of seconds is a count of seconds.
        assert_eq!(at("315360001"), 315_360_001);
    }

    #[test]
    fn offsets_and_units() {
        assert_eq!(at("-3h"), NOW - 3 * HOUR);
        assert_eq!(at("-1d"), NOW - DAY);
        assert_eq!(at("-1w"), NOW - 7 * DAY);
        assert_eq!(at("+5min"), NOW + 300);
        assert_eq!(at("-2months"), 1_618_482_030); // 2021-04-15 10:20:30
        assert_eq!(at("-1y"), 1_592_216_430); // 2020-06-15 10:20:30
        for (spec, secs) in [
            ("+1s", 1),
            ("+1sec", 1),
            ("+1second", 1),
            ("+2seconds", 2),
            ("+1min", 60),
            ("+1minute", 60),
            ("+2minutes", 120),
            ("+1h", HOUR),
            ("+1hr", HOUR),
            ("+1hour", HOUR),
            ("+2hours", 2 * HOUR),
            ("+1d", DAY),
            ("+1day", DAY),
            ("+2days", 2 * DAY),
            ("+1w", 7 * DAY),
            ("+1wk", 7 * DAY),
            ("+1week", 7 * DAY),
            ("+2weeks", 14 * DAY),
            ("+1 HOUR", HOUR),
            ("-1_day", -DAY),
            ("-1,hour", -HOUR),
        ] {
            assert_eq!(at(spec) - NOW, secs, "{spec}");
        }
        for spec in ["-1mon", "-1month", "-2months", "-1y", "-1yr", "-1year", "-2years"] {
            assert!(at(spec) < NOW, "{spec}");
        }
        assert_eq!(at("-1mon"), at("-1month"));
        assert_eq!(at("-1yr"), at("-12months"));
    }

    #[test]
    fn compound_offsets() {
        assert_eq!(at("-1d2h"), NOW - DAY - 2 * HOUR);
        assert_eq!(at("now-1d-2h"), NOW - DAY - 2 * HOUR);
        assert_eq!(at("now - 1d + 2h"), NOW - DAY + 2 * HOUR);
        assert_eq!(at("-1h30min"), NOW - 5400);
    }

    #[test]
    fn m_means_months_or_minutes_as_rrdtool_guesses() {
        // Alone, up to 5 is months and 6 or more is minutes.
        assert_eq!(at("-5m"), at("-5months"));
        assert_eq!(at("-6m"), NOW - 360);
        assert_eq!(at("+24m"), NOW + 24 * 60);
        // After days, weeks, months or years it is months ...
        assert_eq!(at("-1d30m"), at("-1d-30months"));
        assert_eq!(at("-1y6m"), at("-1y-6months"));
        assert_eq!(at("+3w1m"), at("+3w+1month"));
        // ... after hours, minutes or seconds it is minutes.
        assert_eq!(at("-3h20m"), NOW - 3 * HOUR - 1200);
        assert_eq!(at("+5s2m"), NOW + 125);
        // A new sign forgets the context.
        assert_eq!(at("-1h +5m"), at("-1h+5months"));
    }

    #[test]
    fn unit_quirks() {
        // No unit, or an unknown word, is seconds (and the word is eaten).
        assert_eq!(at("-5"), NOW - 5);
        assert_eq!(at("-5foo"), NOW - 5);
        // "+" after a number is taken as its unit; the sign is not renewed.
        assert_eq!(at("-5 +3"), NOW - 8);
        // A character outside the grammar ends the spec.
        assert_eq!(at("-1h;xyz"), NOW - HOUR);
        // atoi truncates to 32 bits.
        assert_eq!(at("+4294967296s"), NOW);
        assert_eq!(at("+99999999999s"), NOW + 1_215_752_191);
    }

    #[test]
    fn named_times() {
        assert_eq!(at("midnight"), 1_623_715_200);
        assert_eq!(at("noon"), 1_623_758_400);
        assert_eq!(at("teatime"), 1_623_772_800);
        assert_eq!(at("noon yesterday"), 1_623_672_000);
        assert_eq!(at("midnight tomorrow"), 1_623_801_600);
        assert_eq!(at("teatime today"), 1_623_772_800);
        assert_eq!(at("midnight -1d"), 1_623_715_200 - DAY);
        // Weekdays of the current week (Sunday first).
        assert_eq!(at("noon monday"), 1_623_672_000);
        assert_eq!(at("noon mon"), 1_623_672_000);
        assert_eq!(at("midnight sat"), 1_624_060_800);
        assert_eq!(at("teatime sun"), 1_623_600_000);
    }

    #[test]
    fn times_of_day() {
        assert_eq!(at("12:30"), 1_623_760_200);
        assert_eq!(at("12:30 pm"), 1_623_760_200);
        assert_eq!(at("12:30pm"), 1_623_760_200);
        assert_eq!(at("12:30 am"), 1_623_717_000);
        assert_eq!(at("12 am"), 1_623_715_200);
        assert_eq!(at("0 pm"), 1_623_758_400);
        assert_eq!(at("5"), 1_623_733_200);
        assert_eq!(at("9:05 pm yesterday"), 1_623_715_200 - 3 * HOUR + 300);
        assert_eq!(at("12:00 monday"), 1_623_672_000);
    }

    #[test]
    fn dates() {
        assert_eq!(at("20100101"), 1_262_304_000);
        assert_eq!(at("01/18/2010"), 1_263_772_800);
        assert_eq!(at("1/18/10"), 1_263_772_800);
        assert_eq!(at("18.01.2010"), 1_263_772_800);
        assert_eq!(at("18.1.10"), 1_263_772_800);
        assert_eq!(at("12:00 1/18/2010"), 1_263_816_000);
        assert_eq!(at("noon 18.01.2010"), 1_263_816_000);
        assert_eq!(at("12:00 1.1.2010 +1h"), 1_262_304_000 + 13 * HOUR);
        // A month name keeps the current time of day ...
        assert_eq!(at("jan 1 2010"), 1_262_304_000 + 37_230);
        assert_eq!(at("January 18 2010 12:00"), 1_263_816_000);
        assert_eq!(at("jan 18 2010 12:00 -1d"), 1_263_816_000 - DAY);
        // ... and without a year it is this year.
        assert_eq!(at("jan 18"), 1_263_772_800 + 37_230 + (1_609_459_200 - 1_262_304_000));
        // A date written as a number ends at midnight.
        assert_eq!(at("noon 1000000000"), 1_000_000_000);
        assert_eq!(at("20100101 am"), 1_262_304_000);
    }

    #[test]
    fn date_quirks_of_rrdtool() {
        // A number first plants year 30000, which a date without a year
        // takes (as 28100 + 1900); "1 jan 2010" reads as hour 1, day 2010.
        assert!(at("12/25") > 800_000_000_000);
        assert!(at("1 jan 2010") > 800_000_000_000);
        assert!(at("12:00 jan 1") > 800_000_000_000);
    }

    #[test]
    fn epoch_is_rrdtool_1899() {
        // All-zero fields are 1899-12-31 00:00 to mktime.
        assert_eq!(at("epoch+1000000000s"), -1_209_075_200);
        assert_eq!(at("epoch+1d"), -2_208_988_800);
    }

    #[test]
    fn start_and_end_references() {
        assert_eq!(pair("end-2h", "now"), Ok((NOW - 2 * HOUR, NOW)));
        assert_eq!(pair("e-1d", "noon"), Ok((1_623_758_400 - DAY, 1_623_758_400)));
        // One month before noon of 2021-06-15 is noon of 2021-05-15.
        assert_eq!(pair("end-1m", "noon"), Ok((1_621_080_000, 1_623_758_400)));
        assert_eq!(pair("noon", "start+1h"), Ok((1_623_758_400, 1_623_758_400 + HOUR)));
        assert_eq!(pair("noon", "s+1w"), Ok((1_623_758_400, 1_623_758_400 + 7 * DAY)));
        assert_eq!(pair("-1d", "start+6h30min"), Ok((NOW - DAY, NOW - DAY + 6 * HOUR + 1800)));
        // rrdtool's proc_start_end does not order them.
        assert_eq!(pair("now", "-1h"), Ok((NOW, NOW - HOUR)));
        assert_eq!(
            pair("end-1d", "start+1d"),
            Err("the start and end times cannot be specified relative to each other".into())
        );
        assert_eq!(
            pair("start-1h", "now"),
            Err("the start time cannot be specified relative to itself".into())
        );
        assert_eq!(pair("now", "end+1h"), Err("the end time cannot be specified relative to itself".into()));
        assert_eq!(pair("foo", "now"), Err("start time: unparsable time: foo".into()));
        assert_eq!(pair("now", "12:99"), Err("end time: parsing HH:MM syntax, got MM = 99 (>59!)".into()));
        assert_eq!(parse("end-1h").map(|t| t.kind()), Ok(AtTimeKind::RelativeToEnd));
        assert_eq!(parse("start+1h").map(|t| t.kind()), Ok(AtTimeKind::RelativeToStart));
        assert_eq!(parse("epoch+1h").map(|t| t.kind()), Ok(AtTimeKind::RelativeToEpoch));
        assert_eq!(parse("-1h").map(|t| t.kind()), Ok(AtTimeKind::Absolute));
        assert_eq!(err("end-1h"), "specifying time relative to the 'start' or 'end' makes no sense here");
    }

    #[test]
    fn error_messages_are_rrdtools() {
        for (spec, message) in [
            ("", "unparsable time: "),
            ("foo bar", "unparsable time: foo bar"),
            (";abc", "unparsable time: ;;abc"),
            ("yesterday", "unparsable time: yesterday"),
            ("monday", "unparsable time: monday"),
            ("now foo", "if 'now' is followed by a token it must be +|- offset"),
            ("12:00 foo", "unparsable trailing text: '...foo'"),
            ("20100101 +1h", "unparsable trailing text: '...1h'"),
            ("jan 1 12:00", "unparsable trailing text: '...:00'"),
            ("start", "'start' or 'end' MUST be followed by +|- offset"),
            ("epoch", "'start' or 'end' MUST be followed by +|- offset"),
            ("12:60", "parsing HH:MM syntax, got MM = 60 (>59!)"),
            ("12:", "Parsing HH:MM syntax, expecting MM as number, got none"),
            ("13 pm", "there cannot be more than 12 AM or PM hours"),
            ("24", "did you really mean month 24?"),
            ("12.30", "did you really mean month 30?"),
            ("0/1/2010", "did you really mean month 0?"),
            ("1/32/2010", "I'm afraid that 32 is not a valid day of the month"),
            ("1/1/1950", "invalid year 1950 (should be either 00-99 or >1900)"),
            ("1/1/69", "won't handle dates before epoch (01/01/1970), sorry"),
            ("jan", "the day of the month should follow month name"),
            ("1/", "there should be day number after '/'"),
            ("1.", "there should be month number after '.'"),
            ("1/1/", "there should be year number after '/'"),
            ("+", "There should be number after '+'"),
            ("-1h -", "There should be number after '-'"),
        ] {
            assert_eq!(err(spec), message, "{spec:?}");
        }
        utc();
        // Absurd numbers do not panic; rrdtool gives them a year far away.
        assert!(parse_time("99999999999999999999999", NOW).unwrap() > 1_000_000_000_000_000);
        assert!(parse_time("-2147483648s-2147483648d", NOW).is_ok());
    }

    proptest::proptest! {
        /// Any mix of the grammar's pieces parses or fails, never panics,
        /// at any clock.
        #[test]
        fn never_panics(
            words in proptest::collection::vec(proptest::sample::select(vec![
                "now", "start", "end", "epoch", "noon", "midnight", "teatime", "yesterday", "tomorrow",
                "today", "jan", "mon", "am", "pm", "m", "s", "h", "d", "w", "y", "min", "months", "foo",
                "+", "-", ":", ".", "/", " ", ";", "_", ",", "0", "1", "12", "24", "31", "59", "60",
                "2010", "20100101", "1000000000", "2147483648", "99999999999999999999",
            ]), 0..12),
            now in proptest::prelude::any::<i64>(),
        ) {
            utc();
            let spec = words.concat();
            if let Ok(at) = parse(&spec) {
                let _ = resolve_start_end(&at, &at, now);
            }
            let _ = parse_time(&spec, now);
            let _ = parse_start_end(&spec, "start+1h", now);
        }
    }

    // ---- differential tests against the real rrdtool ----

    /// What `rrdtool graphv` reveals of a start/end pair.
    #[derive(Debug, PartialEq, Eq)]
    enum Outcome {
        Span(i64, i64),
        /// The start before 1980, which graph refuses naming only it.
        StartOnly(i64),
        Error(String),
    }

    /// Graph's own checks after rrd_proc_start_end, so that every answer
    /// of rrdtool can be compared.
    fn ours(start: &str, end: &str, now: i64) -> Outcome {
        match parse_start_end(start, end, now) {
            Err(e) => Outcome::Error(e.to_string()),
            Ok((s, _)) if s < SECONDS_THRESHOLD => Outcome::StartOnly(s),
            Ok((s, e)) => Outcome::Span(s, e),
        }
    }

    fn unix_now() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock before 1970")
            .as_secs() as i64
    }

    fn rrdtool(args: &[&str], tz: &str) -> std::process::Output {
        Command::new("rrdtool")
            .args(args)
            .env("TZ", tz)
            .output()
            .unwrap_or_else(|e| panic!("cannot run rrdtool (needed for the differential test): {e}"))
    }

    /// Runs rrdtool on the pair and returns what it said and the clock
    /// window in which it read `now`.
    fn theirs(rrd: &str, start: &str, end: &str, tz: &str) -> (Outcome, i64, i64) {
        let def = format!("DEF:x={rrd}:a:AVERAGE");
        let before = unix_now();
        let out =
            rrdtool(&["graphv", "/dev/null", "--start", start, "--end", end, &def, "LINE1:x#000000"], tz);
        let after = unix_now();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let field =
            |name: &str| stdout.lines().find_map(|l| l.strip_prefix(name)?.trim().parse::<i64>().ok());
        let outcome = if let (Some(s), Some(e)) = (field("graph_start = "), field("graph_end = ")) {
            Outcome::Span(s, e)
        } else if let Some(msg) = stderr.lines().find_map(|l| l.strip_prefix("ERROR: ")) {
            let numbers: Vec<i64> = msg
                .split(|c: char| !(c.is_ascii_digit() || c == '-'))
                .filter_map(|w| w.parse().ok())
                .collect();
            if msg.starts_with("start (") && msg.contains("should be less than end") {
                Outcome::Span(numbers[0], numbers[1])
            } else if msg.starts_with("the first entry to fetch should be after 1980 (") {
                Outcome::StartOnly(*numbers.last().expect("a number"))
            } else {
                Outcome::Error(msg.to_string())
            }
        } else {
            panic!("rrdtool said neither times nor an error for {start:?} {end:?}: {stdout} {stderr}");
        };
        (outcome, before, after)
    }

    /// Compares every pair; returns how many agreed and lists the others.
    fn compare(pairs: &[(&str, &str)], tz: &str) -> (usize, Vec<String>) {
        let dir = tempfile::tempdir().expect("temp dir");
        let rrd = dir.path().join("x.rrd");
        let rrd = rrd.to_str().expect("utf-8 temp path");
        let created = rrdtool(
            &[
                "create",
                rrd,
                "-b",
                "1000000000",
                "-s",
                "10000000",
                "DS:a:GAUGE:20000000:U:U",
                "RRA:AVERAGE:0.5:1:10",
            ],
            tz,
        );
        assert!(
            created.status.success(),
            "rrdtool create failed: {}",
            String::from_utf8_lossy(&created.stderr)
        );
        let mut agreed = 0;
        let mut failures = Vec::new();
        for &(start, end) in pairs {
            let (expected, before, after) = theirs(rrd, start, end, tz);
            // rrdtool read the clock somewhere in [before, after].
            let candidates: Vec<Outcome> = (before..=after).map(|now| ours(start, end, now)).collect();
            if candidates.contains(&expected) {
                agreed += 1;
            } else {
                failures.push(format!(
                    "TZ={tz} --start {start:?} --end {end:?}: rrdtool {expected:?}, ours {:?}",
                    candidates[0]
                ));
            }
        }
        (agreed, failures)
    }

    /// Starts tried against a fixed end, ends against a fixed start, and
    /// pairs that refer to each other.
    // A table of test cases.
    #[allow(clippy::too_many_lines)]
    fn utc_pairs() -> Vec<(&'static str, &'static str)> {
        const END: &str = "3000000000";
        const START: &str = "400000000";
        let starts = [
            "1000000000",
            "now",
            "n",
            "-1h",
            "-1d",
            "-1w",
            "+5min",
            "-2months",
            "-1y",
            "-3h",
            "now-1d-2h",
            "-1d2h",
            "-5m",
            "-6m",
            "-24m",
            "-25m",
            "-1h5m",
            "-1d5m",
            "-1h +5m",
            "-1y6m",
            "-3w1m",
            "+5s2m",
            "midnight",
            "noon",
            "teatime",
            "noon yesterday",
            "midnight tomorrow",
            "teatime today",
            "12:30",
            "12:30 pm",
            "12:30 am",
            "12 am",
            "12 pm",
            "0 pm",
            "5",
            "23",
            "9:05 pm yesterday",
            "20100101",
            "01/18/2010",
            "1/18/10",
            "18.01.2010",
            "18.1.10",
            "jan 1 2010",
            "January 18 2010 12:00",
            "feb 29 2012",
            "feb 30 2012",
            "12:00 1/18/2010",
            "noon 18.01.2010",
            "12/25",
            "25.12",
            "1 jan 2010",
            "jan 1",
            "jan 1 99",
            "noon monday",
            "midnight sat",
            "teatime sun",
            "noon mon",
            "Midnight WEDNESDAY",
            "12:00 friday",
            "epoch+1000000000s",
            "epoch+1d",
            "e-1d",
            "end-2h",
            "end-1w",
            "end-1m",
            "end-10m",
            "end-1y",
            "1000000000 -1d",
            "1000000000 + 1 month",
            "2000000000-1y",
            "midnight -1d",
            "noon yesterday -1h",
            "20100101 +1h",
            "1.1.2010 -1h",
            "12:00 1.1.2010 +1h",
            "-1h;xyz",
            "-5 +3",
            "-5foo",
            "+99999999999s",
            "+4294967296s",
            "-2147483648s",
            "",
            ";abc",
            "foo",
            "now foo",
            "12:00 foo",
            "start",
            "epoch",
            "12:60",
            "13 pm",
            "24",
            "12.30",
            "1/1/1950",
            "1/1/69",
            "0/1/2010",
            "1/32/2010",
            "jan",
            "+",
            "-1h -",
            "12:",
            "1/",
            "1/1/",
            "now-",
            "start+1h",
            "20100101 am",
            "noon 1000000000",
            "jan 1 12:00",
            "jan 1 2010 12:00",
            "n-1d",
            "-1 days",
            "-1_day",
            "-1,hour",
            "  -1h  ",
            "NOON",
            "-1 DAY",
            "-1000y",
            "+100000y",
            "19700102",
            "24000100",
            "315360000",
            "315360001",
            "12:00 20100101",
            "noon 20100101 +2d",
            "4:00 pm tomorrow",
            "midnight 12/31/2037",
            "1/1/38",
            "today",
            "noon today -1w",
        ];
        let ends = [
            "now",
            "start+1h",
            "s+1d",
            "start+2w",
            "start+1m",
            "start+30m",
            "start+1y",
            "start-1h",
            "noon",
            "-1h",
            "end+1h",
            "1000000000",
            "midnight tomorrow",
            "start+1d-1s",
            "start+1y6m",
        ];
        let mut pairs: Vec<(&str, &str)> = starts.iter().map(|&s| (s, END)).collect();
        pairs.extend(ends.iter().map(|&e| (START, e)));
        pairs.extend([
            ("end-1d", "start+1d"),
            ("end-1d", "now"),
            ("end-1h", "noon"),
            ("noon", "start+1h"),
            ("1000000000", "start+1month"),
            ("end-1month", "1000000000"),
            ("epoch+1d", "epoch+2d"),
            ("epoch+1s", "epoch"),
            ("end-1d", "epoch+3000000000s"),
            ("bad", "worse"),
            ("now", "worse"),
            ("start+1d", "end-1d"),
        ]);
        pairs
    }

    #[test]
    fn differential_against_rrdtool_utc() {
        utc();
        let pairs = utc_pairs();
        let (agreed, failures) = compare(&pairs, "UTC");
        assert!(
            failures.is_empty(),
            "{} of {} differ:\n{}",
            failures.len(),
            pairs.len(),
            failures.join("\n")
        );
        assert!(agreed >= 50, "only {agreed} specs compared");
    }

    const CHILD_MARKER: &str = "RRD_ENGINE_ATTIME_ZONE_CHILD";

    /// Pairs whose answers depend on DST: calendar offsets across a change,
    /// times the change skips or repeats, and `localtime` seconds whose DST
    /// flag rrdtool keeps.
    const ZONE_PAIRS: &[(&str, &str)] = &[
        ("noon 03/27/2021", "start+1d"),
        ("noon 03/27/2021", "start+24h"),
        ("noon 03/27/2021 +1d", "now"),
        ("noon 03/27/2021 +24h", "now"),
        ("end-1d", "noon 03/28/2021"),
        ("end-24h", "noon 03/28/2021"),
        ("end-1w", "noon 04/01/2021"),
        ("end-1m", "noon 04/15/2021"),
        ("end-1d", "1616929200"),
        ("1616850000", "start+1d"),
        ("1000000000 -180d", "now"),
        ("1000000000 +60d", "now"),
        ("1000000000 -6months", "now"),
        ("2:30 03/28/2021", "now"),
        ("2:30 10/31/2021", "now"),
        ("2:30 03/14/2021", "now"),
        ("1:30 11/07/2021", "now"),
        ("midnight 10/31/2021", "start+1d"),
        ("03/28/2021", "start+2h"),
        ("20211031", "start+1d"),
        ("noon 10/30/2021 +1d", "now"),
        ("end-1d", "20211101"),
        ("end-1d", "20211108"),
        ("end-1d", "20210315"),
        ("12:00 03/28/2021 -1d", "now"),
        ("teatime 03/29/2021 -2d", "now"),
        ("midnight 03/14/2021 +1d", "start+1w"),
        ("epoch+1000000000s", "now"),
        ("epoch+3000000000s", "now"),
        ("-1d", "now"),
        ("-1y", "now"),
        ("-6months", "now"),
        ("noon yesterday", "now"),
        ("midnight", "now"),
        ("-1w", "now"),
        ("noon mon", "now"),
        ("jan 1 2021", "start+1y"),
        ("jul 1 2021", "start-6m"),
    ];

    /// The same comparison in zones with DST, each in a child process of
    /// this test binary so that this process keeps TZ=UTC.
    #[test]
    fn differential_against_rrdtool_other_zones() {
        let exe = std::env::current_exe().expect("test binary path");
        for zone in ["Europe/Zurich", "America/New_York", "Australia/Lord_Howe"] {
            assert!(
                std::path::Path::new("/usr/share/zoneinfo").join(zone).exists(),
                "time zone {zone} is missing (install tzdata)"
            );
            let out = Command::new(&exe)
                .args([
                    "--exact",
                    "attime::tests::zone_child",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("TZ", zone)
                .env(CHILD_MARKER, "1")
                .output()
                .expect("rerun the test binary");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && stdout.contains("1 passed"),
                "TZ={zone}: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    #[test]
    #[ignore = "run by differential_against_rrdtool_other_zones with its own TZ"]
    fn zone_child() {
        let Ok(zone) = std::env::var("TZ") else { return };
        if std::env::var(CHILD_MARKER).is_err() {
            return;
        }
        crate::ctime::reset_timezone();
        let (agreed, failures) = compare(ZONE_PAIRS, &zone);
        assert!(failures.is_empty(), "{} differ:\n{}", failures.len(), failures.join("\n"));
        assert_eq!(agreed, ZONE_PAIRS.len());
    }
}
