//! The help of rrdtool 1.7.2's commands, as `rrdtool help COMMAND` (or
//! the command alone) prints it between its `Usage:` line and its licence
//! paragraph. It is program output that scripts and tests compare, like
//! the error messages, so it is kept as printed; `{prog}` stands for the
//! name the program was started under. Each text ends with the blank line
//! printed before the closing paragraph.

pub const CREATE: &str = r#"* create - create a new RRD

	{prog} create filename [--start|-b start time]
		[--step|-s step]
		[--template|-t template-file]
		[--source|-r source-file]
		[--no-overwrite|-O]
		[--daemon|-d address]
		[DS:ds-name:DST:dst arguments]
		[RRA:CF:cf arguments]

"#;

pub const UPDATE: &str = r#"* update - update an RRD

	{prog} update filename
		[--template|-t ds-name:ds-name:...]
		[--skip-past-updates|-s]
		[--daemon|-d <address>]
		time|N:value[:value...]

		at-time@value[:value...]

		[ time:value[:value...] ..]

"#;

pub const UPDATEV: &str = r#"* updatev - a verbose version of update
	returns information about values, RRAs, and datasources updated

	{prog} updatev filename
		[--template|-t ds-name:ds-name:...]
		[--skip-past-updates|-s]
		time|N:value[:value...]

		at-time@value[:value...]

		[ time:value[:value...] ..]

"#;

/// The options and elements `graph` and `graphv` share in their help.
macro_rules! graph_options {
    () => {
        r#"
		[-x|--x-grid x-axis grid and label]
		[-Y|--alt-y-grid] [--full-size-mode]
		[--left-axis-format format]
		[-y|--y-grid y-axis grid and label]
		[-v|--vertical-label string] [-w|--width pixels]
		[--right-axis scale:shift] [--right-axis-label label]
		[--right-axis-format format]
		[-h|--height pixels] [-o|--logarithmic]
		[-u|--upper-limit value] [-z|--lazy]
		[-l|--lower-limit value] [-r|--rigid]
		[-g|--no-legend] [-d|--daemon <address>]
		[-F|--force-rules-legend]
		[-j|--only-graph]

		[-n|--font FONTTAG:size:font]
		[-m|--zoom factor]
		[-A|--alt-autoscale]
		[-M|--alt-autoscale-max]
		[-G|--graph-render-mode {normal,mono}]
		[-R|--font-render-mode {normal,light,mono}]
		[-B|--font-smoothing-threshold size]
		[-T|--tabwidth width]
		[-E|--slope-mode]
		[-P|--pango-markup]
		[-N|--no-gridfit]
		[-X|--units-exponent value]
		[-L|--units-length value]
		[-S|--step seconds]
		[-f|--imginfo printfstr]
		[-a|--imgformat PNG]
		[-c|--color COLORTAG#rrggbb[aa]]
		[--border width
		[-t|--title string]
		[-W|--watermark string]
		[-Z|--use-nan-for-all-missing-data]
		[DEF:vname=rrd:ds-name:CF]

		[CDEF:vname=rpn-expression]
		[VDEF:vdefname=rpn-expression]
		[PRINT:vdefname:format]
		[GPRINT:vdefname:format]
		[COMMENT:text]
		[SHIFT:vname:offset]
		[TEXTALIGN:{left|right|justified|center}]
		[TICK:vname#rrggbb[aa][:[fraction][:legend]]]
		[HRULE:value#rrggbb[aa][:legend]]
		[VRULE:value#rrggbb[aa][:legend]]
		[LINE[width]:vname[#rrggbb[aa][:[legend][:STACK]]]]
		[AREA:vname[#rrggbb[aa][:[legend][:STACK]]]]
		[PRINT:vname:CF:format] (deprecated)
		[GPRINT:vname:CF:format] (deprecated)
		[STACK:vname[#rrggbb[aa][:legend]]] (deprecated)

"#
    };
}

pub const GRAPH: &str = concat!(
    r#"* graph - generate a graph from one or several RRD

	{prog} graph filename [-s|--start seconds] [-e|--end seconds]
"#,
    graph_options!()
);

pub const GRAPHV: &str = concat!(
    r#"* graphv - generate a graph from one or several RRD
           with meta data printed before the graph

	{prog} graphv filename [-s|--start seconds] [-e|--end seconds]
"#,
    graph_options!()
);

pub const DUMP: &str = r#"* dump - dump an RRD to XML

	{prog} dump [--header|-h {none,xsd,dtd}]
		[--no-header|-n]
		[--daemon|-d address]
		file.rrd [file.xml]
"#;

pub const RESTORE: &str = r#"* restore - restore an RRD file from its XML form

	{prog} restore [--range-check|-r] [--force-overwrite|-f] filename.xml filename.rrd

"#;

pub const LAST: &str = r#"* last - show last update time for RRD

	{prog} last filename.rrd
		[--daemon|-d address]

"#;

pub const LASTUPDATE: &str = r#"* lastupdate - returns the most recent datum stored for
  each DS in an RRD

	{prog} lastupdate filename.rrd
		[--daemon|-d address]

"#;

pub const FIRST: &str = r#"* first - show first update time for RRA within an RRD

	{prog} first filename.rrd [--rraindex number] [--daemon|-d address]

"#;

pub const INFO: &str = r#"* info - returns the configuration and status of the RRD

	{prog} info [--daemon|-d <addr> [--noflush|-F]] filename.rrd

"#;

pub const LIST: &str = r#"* list - returns the list of RRDs

	{prog} list [--daemon <address>] [--noflush] <dirname>

"#;

pub const FETCH: &str = r#"* fetch - fetch data out of an RRD

	{prog} fetch filename.rrd CF
		[-r|--resolution resolution]
		[-s|--start start] [-e|--end end]
		[-a|--align-start]
		[-d|--daemon <address>]

"#;

pub const TUNE: &str = r#" * tune -  Modify some basic properties of an RRD

	{prog} tune filename
		[--heartbeat|-h ds-name:heartbeat]
		[--data-source-type|-d ds-name:DST]
		[--data-source-rename|-r old-name:new-name]
		[--minimum|-i ds-name:min] [--maximum|-a ds-name:max]
		[--deltapos|-p scale-value] [--deltaneg|-n scale-value]
		[--failure-threshold|-f integer]
		[--window-length|-w integer]
		[--alpha|-x adaptation-parameter]

		[--beta|-y adaptation-parameter]
		[--gamma|-z adaptation-parameter]
		[--gamma-deviation|-v adaptation-parameter]
		[--smoothing-window|-s fraction-of-season]
		[--smoothing-window-deviation|-S fraction-of-season]
		[--aberrant-reset|-b ds-name]

		[--step|-t newstep]
		[--daemon|-D address]
		[DEL:ds-name]
		[DS:ds-spec]
		[DELRRA:index]
		[RRA:rra-spec]
		[RRA#index:[+-=]number]

"#;

pub const RESIZE: &str = r#" * resize - alter the length of one of the RRAs in an RRD

	{prog} resize filename rranum GROW|SHRINK rows

"#;

pub const XPORT: &str = r#"* xport - generate XML dump from one or several RRD

	{prog} xport [-s|--start seconds] [-e|--end seconds]
		[-m|--maxrows rows]
		[--step seconds]
		[--enumds] [--json]
		[-d|--daemon address]
		[DEF:vname=rrd:ds-name:CF]
		[CDEF:vname=rpn-expression]
		[XPORT:vname:legend]

"#;

pub const FLUSHCACHED: &str = r#"* flushcached - flush cached data out to an RRD file

	{prog} flushcached filename.rrd
		[-d|--daemon <address>]

"#;

/// The list of commands rrdtool's usage text prints (its layout: the
/// double space after `graphv,` is rrdtool's).
pub const COMMAND_LIST: &str = "Valid commands: create, update, updatev, graph, graphv,  dump, restore,
\t\tlast, lastupdate, first, info, list, fetch, tune,
\t\tresize, xport, flushcached

";
