//! rrd-graph: the common subset of `rrdtool graph`/`graphv` 1.7.2, drawn
//! as PNG, SVG, PDF or EPS over the engine's DEF/CDEF/VDEF evaluation.
//!
//! Owns: the graph elements (LINE, AREA, STACK, HRULE, VRULE, COMMENT,
//! GPRINT, PRINT, TEXTALIGN), the PRINT format whitelist and formatter,
//! the image layout, y-axis scaling, time axis and legend. Pictures are
//! drawn through Cairo and Pango, the libraries RRDtool draws with, behind
//! the small `render::Canvas` seam: PNG from Cairo's image surface, SVG,
//! PDF and EPS from its vector surfaces, so they equal RRDtool's. The data (fetch, consolidation, RPN, VDEF) belongs to
//! `rrd_engine::xport`; this crate never re-implements it.
//!
//! Invariants: untrusted element text and options never panic and never
//! reach a C `printf`; image size, graphv numbers and PRINT text follow
//! RRDtool's arithmetic so scripts that read them keep working.
//!
//! Every graph option of rrdtool 1.7.2 is accepted and checked as rrdtool
//! checks it (`options`); those that change the layout change it as in
//! rrdtool (`graph`, `labels`, `timeaxis`, `render`). Also the data formats
//! of `-a` (XML, XMLENUM, JSON, JSONTIME, CSV, TSV, SSV: the graph's series
//! exported, as RRDtool does), TICK, SHIFT and gradient AREAs, and
//! PRINT/GPRINT's strftime/valstrftime/valstrfduration.
//!
//! Text is measured and drawn by one Pango layout per image, so sizes,
//! legend places and `--pango-markup` follow Pango for every font.
//!
//! Deliberately not here: RRDtool's vertical tag text (rrdscale writes its
//! own name there).

#![forbid(unsafe_code)]

mod dataformat;
mod elements;
pub mod error;
mod graph;
mod labels;
pub mod options;
pub mod printf;
mod render;
mod timeaxis;
mod timefmt;

pub use error::GraphError;
pub use graph::{image_info, lazy_keeps, render, render_with, GraphOutput, InfoValue};
pub use options::{ImageFormat, Options, Rgba, OPTION_SPECS};
