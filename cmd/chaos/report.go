package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// report prints the run's table: what was injected, what was played, and
// what the checks found. The last line says PASS or FAIL.
func report(out io.Writer, cfg config, cl *cluster, flog *faultLog, samples *gameSamples, rec *recorder, v verdict) {
	wait := "MATCH_WAIT_REPLICAS=1, RATING_WAIT_REPLICAS=1, MM_WAIT_REPLICAS=1"
	if !cfg.WaitReplicas {
		wait = "MATCH_WAIT_REPLICAS=0, RATING_WAIT_REPLICAS=0, MM_WAIT_REPLICAS=0 (acknowledged writes may be lost in a failover)"
	}
	fmt.Fprintf(out, "\nchaos run: seed %d, %v of play, %d games wanted (%d players), time control %s, %s\n",
		cfg.Seed, cfg.Duration, cfg.Games, 4*cfg.Games, cfg.TimeControl, wait)
	fmt.Fprintln(out, "fault log:")
	for _, l := range flog.lines {
		fmt.Fprintln(out, "  "+l)
	}
	row := func(k string, format string, args ...any) {
		fmt.Fprintf(out, "| %-30s | %-60s |\n", k, fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(out, "| %-30s | %-60s |\n", "what", "count")
	fmt.Fprintf(out, "|%s|%s|\n", strings.Repeat("-", 32), strings.Repeat("-", 62))
	for _, k := range allKinds {
		switch {
		case k == faultNetem && cl.ns == nil:
			row("fault: "+string(k), "skipped: %s", cl.nsSkipped)
		case k == faultNetem:
			row("fault: network", "%d on match-1 and rating-1's veth: %s", flog.counts[k], cl.ns.shaping)
		case flog.failed[k] > 0:
			row("fault: "+string(k), "%d (%d more failed to inject)", flog.counts[k], flog.failed[k])
		default:
			row("fault: "+string(k), "%d", flog.counts[k])
		}
	}
	avg := 0.0
	if samples.n > 0 {
		avg = float64(samples.total) / float64(samples.n)
	}
	row("games", "%d: %d finished, %d running, %d aborted", v.games, v.finished, v.running, v.aborted)
	row("games at once (after warm-up)", "min %d, mean %.1f", samples.min, avg)
	row("moves acknowledged", "%d", v.acked)
	row("moves lost", "%d", v.lost)
	row("duplicates", "%d", v.duplicates)
	row("event logs out of order", "%d", v.outOfOrder)
	row("stuck games", "%d", v.stuck)
	row("tickets", "%d: %d matched twice, %d lost, %d still searching", v.tickets, v.ticketsTwice, v.ticketsLost, v.ticketsOpen)
	row("matches no ticket names", "%d", v.matchesWithoutTicket)
	row("rated matches finished", "%d (%d more ended while the ratings were read)", v.ratedMatches, v.ratedLate)
	row("rating mismatches", "%d", v.ratingMismatches)
	row("flags", "%d: %d checked, worst %+v from the deadline", v.flags, v.flags-v.flagsUnchecked, v.worstFlag.Round(time.Millisecond))
	row("flags late (> 1 s)", "%d with no Redis or network fault in progress", v.flagsLate)
	for _, k := range allKinds {
		if n := v.flagsLateInFault[k]; n > 0 {
			row("flags late during a fault", "%d during %s (not counted as losses)", n, k)
		}
	}
	if len(rec.errs) > 0 {
		var kinds []string
		for k, n := range rec.errs {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(kinds)
		row("client waits and games cut", "%s", strings.Join(kinds, ", "))
	}
	for _, p := range v.problems {
		fmt.Fprintln(out, "problem: "+p)
	}
	if n := v.losses(); n > 0 {
		fmt.Fprintf(out, "FAIL: %d losses\n", n)
	} else {
		fmt.Fprintln(out, "PASS: nothing lost")
	}
}
