// The peer of bench_promtext: Prometheus' own text parser
// (github.com/prometheus/common/expfmt, TextParser.TextToMetricFamilies) on
// the same scrape file, one goroutine, best of repeated runs for at least
// the given seconds. Prints "samples seconds" of the best run. Times are
// the process's CPU time (GOMAXPROCS 1: the parser, its allocations and
// its garbage collection on one core), as bench_promtext times its own
// parser in its thread's CPU time: on a shared machine wall time also
// counts the time other processes held the core.
//
// Built offline from Debian's packages (golang-go,
// golang-github-prometheus-common-dev):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o expfmt_bench .
package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
)

func cpu() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: expfmt_bench FILE SECONDS")
		os.Exit(2)
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	secs, err := strconv.ParseFloat(os.Args[2], 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	runtime.GOMAXPROCS(1)
	best, samples := time.Duration(1<<62), 0
	start := cpu()
	for iters := 0; iters < 3 || (cpu()-start).Seconds() < secs; iters++ {
		var p expfmt.TextParser
		t0 := cpu()
		fams, err := p.TextToMetricFamilies(bytes.NewReader(data))
		d := cpu() - t0
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		n := 0
		for _, f := range fams {
			n += len(f.Metric)
		}
		if d < best {
			best, samples = d, n
		}
	}
	fmt.Printf("%d %.6f\n", samples, best.Seconds())
}
