//! The RPN operators of RRDtool 1.7.2 and their numbers.
//!
//! A COMPUTE data source stores its expression as operator numbers, so the
//! number of every operator is part of the file format: it is the position
//! of the operator in rrdtool's `op_en` enum, which only ever grows at the
//! end. The numbers below were read back from files that rrdtool 1.7.2
//! created (see the tests in `rpn::rrdtool_tests`); the five that a COMPUTE
//! data source cannot hold (STEPWIDTH and NEW*, 60..=64) sit between INDEX
//! and SMIN, which is the only order consistent with SMIN being 65.
//!
//! Operands are not operators: numbers, variables and `PREV(name)` are
//! [`super::Node`]s with their own codes ([`CODE_NUMBER`], [`CODE_VARIABLE`],
//! [`CODE_PREV_OTHER`]), and [`CODE_END`] terminates a stored expression.

/// Code of a number operand (the value is stored beside it).
pub const CODE_NUMBER: u8 = 0;
/// Code of a variable operand (the index of the data source is stored beside it).
pub const CODE_VARIABLE: u8 = 1;
/// Code that terminates a stored expression.
pub const CODE_END: u8 = 32;
/// Code of `PREV(name)` (the index of the data source is stored beside it).
pub const CODE_PREV_OTHER: u8 = 36;

/// An RPN operator: everything in an expression that is not an operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Op {
    Inf = 2,
    Prev = 3,
    NegInf = 4,
    Unkn = 5,
    Now = 6,
    Time = 7,
    Add = 8,
    Mod = 9,
    Sub = 10,
    Mul = 11,
    Div = 12,
    Sin = 13,
    Dup = 14,
    Exc = 15,
    Pop = 16,
    Cos = 17,
    Log = 18,
    Exp = 19,
    Lt = 20,
    Le = 21,
    Gt = 22,
    Ge = 23,
    Eq = 24,
    If = 25,
    Min = 26,
    Max = 27,
    Limit = 28,
    Floor = 29,
    Ceil = 30,
    Un = 31,
    Ltime = 33,
    Ne = 34,
    IsInf = 35,
    Count = 37,
    Atan = 38,
    Sqrt = 39,
    Sort = 40,
    Rev = 41,
    Trend = 42,
    TrendNan = 43,
    Atan2 = 44,
    Rad2Deg = 45,
    Deg2Rad = 46,
    Predict = 47,
    PredictSigma = 48,
    Avg = 49,
    Abs = 50,
    AddNan = 51,
    MinNan = 52,
    MaxNan = 53,
    Median = 54,
    PredictPerc = 55,
    Depth = 56,
    Copy = 57,
    Roll = 58,
    Index = 59,
    StepWidth = 60,
    NewDay = 61,
    NewWeek = 62,
    NewMonth = 63,
    NewYear = 64,
    Smin = 65,
    Smax = 66,
    Stdev = 67,
    Percent = 68,
    Pow = 69,
}

impl Op {
    /// Every operator, in the order rrdtool's parser tries them. The order
    /// does not change what parses (a name only matches a whole token) but
    /// keeping it makes the parser easy to hold against rrdtool's.
    pub const ALL: [Op; 66] = [
        Op::Add,
        Op::Sub,
        Op::Mul,
        Op::Div,
        Op::Mod,
        Op::Sin,
        Op::Cos,
        Op::Log,
        Op::Floor,
        Op::Ceil,
        Op::Exp,
        Op::Dup,
        Op::Exc,
        Op::Pop,
        Op::Ltime,
        Op::NewDay,
        Op::NewWeek,
        Op::NewMonth,
        Op::NewYear,
        Op::StepWidth,
        Op::Lt,
        Op::Le,
        Op::Gt,
        Op::Ge,
        Op::Eq,
        Op::If,
        Op::Min,
        Op::Max,
        Op::Limit,
        Op::Unkn,
        Op::Un,
        Op::NegInf,
        Op::Ne,
        Op::Count,
        Op::Prev,
        Op::Inf,
        Op::IsInf,
        Op::Now,
        Op::Time,
        Op::Atan2,
        Op::Atan,
        Op::Sqrt,
        Op::Sort,
        Op::Rev,
        Op::Trend,
        Op::TrendNan,
        Op::Predict,
        Op::PredictSigma,
        Op::PredictPerc,
        Op::Rad2Deg,
        Op::Deg2Rad,
        Op::Avg,
        Op::Abs,
        Op::AddNan,
        Op::MinNan,
        Op::MaxNan,
        Op::Median,
        Op::Depth,
        Op::Copy,
        Op::Roll,
        Op::Index,
        Op::Smax,
        Op::Smin,
        Op::Stdev,
        Op::Percent,
        Op::Pow,
    ];

    /// The number rrdtool stores for this operator.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The operator stored as `code`, if `code` is an operator (operand
    /// codes and END are not).
    pub fn from_code(code: u8) -> Option<Op> {
        Op::ALL.iter().copied().find(|op| op.code() == code)
    }

    /// The operator spelled `name` (exactly, upper case), if any.
    pub fn from_name(name: &str) -> Option<Op> {
        Op::ALL.iter().copied().find(|op| op.name() == name)
    }

    /// The spelling in an expression.
    pub fn name(self) -> &'static str {
        match self {
            Op::Inf => "INF",
            Op::Prev => "PREV",
            Op::NegInf => "NEGINF",
            Op::Unkn => "UNKN",
            Op::Now => "NOW",
            Op::Time => "TIME",
            Op::Add => "+",
            Op::Mod => "%",
            Op::Sub => "-",
            Op::Mul => "*",
            Op::Div => "/",
            Op::Sin => "SIN",
            Op::Dup => "DUP",
            Op::Exc => "EXC",
            Op::Pop => "POP",
            Op::Cos => "COS",
            Op::Log => "LOG",
            Op::Exp => "EXP",
            Op::Lt => "LT",
            Op::Le => "LE",
            Op::Gt => "GT",
            Op::Ge => "GE",
            Op::Eq => "EQ",
            Op::If => "IF",
            Op::Min => "MIN",
            Op::Max => "MAX",
            Op::Limit => "LIMIT",
            Op::Floor => "FLOOR",
            Op::Ceil => "CEIL",
            Op::Un => "UN",
            Op::Ltime => "LTIME",
            Op::Ne => "NE",
            Op::IsInf => "ISINF",
            Op::Count => "COUNT",
            Op::Atan => "ATAN",
            Op::Sqrt => "SQRT",
            Op::Sort => "SORT",
            Op::Rev => "REV",
            Op::Trend => "TREND",
            Op::TrendNan => "TRENDNAN",
            Op::Atan2 => "ATAN2",
            Op::Rad2Deg => "RAD2DEG",
            Op::Deg2Rad => "DEG2RAD",
            Op::Predict => "PREDICT",
            Op::PredictSigma => "PREDICTSIGMA",
            Op::Avg => "AVG",
            Op::Abs => "ABS",
            Op::AddNan => "ADDNAN",
            Op::MinNan => "MINNAN",
            Op::MaxNan => "MAXNAN",
            Op::Median => "MEDIAN",
            Op::PredictPerc => "PREDICTPERC",
            Op::Depth => "DEPTH",
            Op::Copy => "COPY",
            Op::Roll => "ROLL",
            Op::Index => "INDEX",
            Op::StepWidth => "STEPWIDTH",
            Op::NewDay => "NEWDAY",
            Op::NewWeek => "NEWWEEK",
            Op::NewMonth => "NEWMONTH",
            Op::NewYear => "NEWYEAR",
            Op::Smin => "SMIN",
            Op::Smax => "SMAX",
            Op::Stdev => "STDEV",
            Op::Percent => "PERCENT",
            Op::Pow => "POW",
        }
    }

    /// Whether the operator needs the time axis or a whole series, which a
    /// COMPUTE data source (evaluated one step at a time, from the PDPs of
    /// that step alone) does not have. rrdtool's create refuses exactly
    /// these; NOW is allowed (it reads the clock).
    pub fn needs_time_series(self) -> bool {
        matches!(
            self,
            Op::Time
                | Op::Ltime
                | Op::StepWidth
                | Op::Prev
                | Op::NewDay
                | Op::NewWeek
                | Op::NewMonth
                | Op::NewYear
                | Op::Count
                | Op::Trend
                | Op::TrendNan
                | Op::Predict
                | Op::PredictSigma
                | Op::PredictPerc
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code from 2 to 69 except the operand codes and END names exactly
    /// one operator, and names round-trip: a gap or a duplicate here would
    /// silently change what stored expressions mean.
    #[test]
    fn codes_are_dense_and_names_round_trip() {
        let mut seen = [false; 70];
        for op in Op::ALL {
            assert!(!seen[op.code() as usize], "{op:?} shares its code");
            seen[op.code() as usize] = true;
            assert_eq!(Op::from_code(op.code()), Some(op));
            assert_eq!(Op::from_name(op.name()), Some(op));
        }
        for code in 0..70u8 {
            let operand = matches!(code, CODE_NUMBER | CODE_VARIABLE | CODE_END | CODE_PREV_OTHER);
            assert_eq!(seen[code as usize], !operand, "code {code}");
        }
        assert_eq!(Op::from_code(70), None);
        assert_eq!(Op::from_code(CODE_END), None);
    }

    /// The numbers that decide binary compatibility, spot-checked against
    /// values read from rrdtool-made files.
    #[test]
    fn codes_match_rrdtool_files() {
        assert_eq!(Op::Add.code(), 8);
        assert_eq!(Op::Mul.code(), 11);
        assert_eq!(Op::AddNan.code(), 51);
        assert_eq!(Op::Median.code(), 54);
        assert_eq!(Op::Depth.code(), 56);
        assert_eq!(Op::Index.code(), 59);
        assert_eq!(Op::Smin.code(), 65);
        assert_eq!(Op::Pow.code(), 69);
    }
}
