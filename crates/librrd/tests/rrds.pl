# One side of the Perl RRDs differential run (tests/python_rrdtool.rs).
#
# Usage: perl rrds.pl DIR SEED CASES
#
# Random schemas and update streams (Perl's srand(SEED) makes both sides
# draw the same) through RRDs, in DIR; prints every call's result and
# RRDs::error, then the librrd files mapped into this process.
use strict;
use warnings;
use RRDs;
use Data::Dumper;

$Data::Dumper::Sortkeys = 1;
$Data::Dumper::Indent = 1;
$Data::Dumper::Useqq = 1;

my ($dir, $seed, $cases) = @ARGV;
chdir $dir or die "chdir $dir: $!";
srand($seed);

sub pick { return $_[int(rand(@_))] }

sub call {
    my ($name, @args) = @_;
    no strict 'refs';
    my @r = &{"RRDs::$name"}(@args);
    my $err = RRDs::error() // '';
    if (ref $r[0] eq 'HASH') {
        # An RRA's current row is random in rrdtool (and in rrdscale).
        delete $r[0]{$_} for grep { /\.cur_row$/ } keys %{$r[0]};
    }
    print Data::Dumper->Dump([[$name, \@args, \@r, $err]], ['call']);
}

for my $case (0 .. $cases - 1) {
    my $name = "p$case.rrd";
    my $step = pick(10, 60, 300);
    my $start = 1_500_000_000 + int(rand(86400));
    my $nds = 1 + int(rand(2));
    my @ds = map { sprintf("DS:v%d:%s:%d:U:U", $_, pick(qw(GAUGE COUNTER DERIVE ABSOLUTE)), $step * 3) } 0 .. $nds - 1;
    my @rra = map { sprintf("RRA:%s:0.5:%d:%d", $_, pick(1, 3), 5 + int(rand(20))) } qw(AVERAGE MAX LAST);
    call('create', $name, '--start', $start, '--step', $step, @ds, @rra);
    my $t = $start;
    for my $batch (0 .. 2) {
        my @values;
        for (1 .. 1 + int(rand(20))) {
            $t += pick(1, $step, $step, 3 * $step + 1);
            push @values, join(':', $t, map { pick('U', int(rand(1000)), int(rand(100000))) } 1 .. $nds);
        }
        call(pick('update', 'updatev'), $name, @values);
        call('update', $name, "$start:1" . (':1' x ($nds - 1)));    # in the past
        call('first', $name);
        call('last', $name);
        call('info', $name);
        my $end = $t - $t % $step;
        call('fetch', $name, pick(qw(AVERAGE MAX LAST)), '-s', $start, '-e', $end);
        call('xport', '-s', $start, '-e', $end, "DEF:a=$name:v0:AVERAGE", 'CDEF:b=a,3,+', 'XPORT:a:a', 'XPORT:b');
        call('graphv', "g$case.png", '-s', $start, '-e', $end, "DEF:a=$name:v0:MAX", 'LINE2:a#0000ff', 'PRINT:a:MAX:%.2lf');
        my $times = [RRDs::times("$start", 'start+1h')];
        print Data::Dumper->Dump([$times], ['times']);
    }
    call('tune', $name, '-h', "v0:" . ($step * 4));
    call('dump', $name, "x$case.xml");
}
call('info', 'missing.rrd');
call('fetch', 'missing.rrd', 'AVERAGE');
call('create', 'bad.rrd', 'DS:x:GAUGE:1:U:U');
call('update', 'p0.rrd', 'garbage');
call('tune', 'p0.rrd', '--heartbeat', 'x');
call('restore', 'missing.xml', 'y.rrd', '--force-overwrite');
call('xport', 'DEF:a=missing.rrd:x:AVERAGE', 'XPORT:a');
call('graph', 'e.png', 'DEF:a=missing.rrd:x:AVERAGE', 'LINE:a#000000');

open my $maps, '<', '/proc/self/maps' or die;
my %libs = map { (split ' ')[-1] => 1 } grep { /librrd\.so/ } <$maps>;
print "libs: ", join(' ', sort keys %libs), "\n";
