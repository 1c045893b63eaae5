# Grouped bar chart for bench/run, in the storage reviews' style: one
# group per configuration, one bar per workload.  Called as
#   gnuplot -e "datafile='F'; outfile='O.png'; ttl='T'; ylab='Y'; ncols=N; unity=0|1" chart.gnuplot
# DATAFILE: a header line (config "label" "label" ...), then one line per
# configuration; "-" marks a cell that was not measured.
set terminal pngcairo size 1100,560 font "sans,10"
set output outfile
set title ttl font "sans,12"
set ylabel ylab
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set datafile missing "-"
set key outside right top vertical noenhanced
set grid ytics
set yrange [0:*]
set xtics nomirror noenhanced
set border 3
set ytics nomirror
if (unity) set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 1.5 lc rgb "#444444"
plot for [i=2:ncols] datafile using i:xtic(1) title columnheader(i)
