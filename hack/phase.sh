#!/usr/bin/env bash
# Times the phases of `make test-all` and the machine's CPU use during each, for docs/e2e.md.
#
#   hack/phase.sh reset           start a new record
#   hack/phase.sh run NAME CMD…   run CMD as the phase NAME, recording its wall time and CPU use
#   hack/phase.sh report          print the record as a table
#
# CPU is the whole machine's, from /proc/stat: phases that run side by side see each other's
# load. "busy" is the mean share of all cores in use over the phase; "saturated" the share of its
# 10-second samples with the cores over 90% busy, which tells a phase bound by CPU from one that
# waits on timers.
set -euo pipefail

record=${PHASES_FILE:-_artifacts/phases.tsv}

# cpu prints the jiffies the machine has spent busy and in all, since boot.
cpu() {
	awk '/^cpu / { idle = $5 + $6; total = 0; for (i = 2; i <= NF; i++) total += $i; print total - idle, total }' /proc/stat
}

# sample writes one line a 10 seconds, 1 when the cores were over 90% busy, else 0.
sample() {
	read -r busy0 total0 < <(cpu)
	while sleep 10; do
		read -r busy total < <(cpu)
		awk -v b=$((busy - busy0)) -v t=$((total - total0)) 'BEGIN { print ((t > 0 && b / t > 0.9) ? 1 : 0) }'
		busy0=$busy total0=$total
	done
}

case ${1:-} in
reset)
	mkdir -p "$(dirname "$record")"
	printf 'phase\tstart\tseconds\tbusy\tsaturated\n' > "$record"
	;;
run)
	name=$2
	shift 2
	samples=$(mktemp)
	sample > "$samples" &
	sampler=$!
	start=$(date +%s)
	read -r busy0 total0 < <(cpu)
	rc=0
	"$@" || rc=$?
	read -r busy1 total1 < <(cpu)
	kill "$sampler" 2>/dev/null || true
	wait "$sampler" 2>/dev/null || true
	end=$(date +%s)
	busy=$(awk -v b=$((busy1 - busy0)) -v t=$((total1 - total0)) 'BEGIN { printf "%.0f%%", (t > 0) ? 100 * b / t : 0 }')
	saturated=$(awk '{ n++; s += $1 } END { printf "%.0f%%", n ? 100 * s / n : 0 }' "$samples")
	rm -f "$samples"
	mkdir -p "$(dirname "$record")"
	printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$start" $((end - start)) "$busy" "$saturated" >> "$record"
	echo "phase $name: $((end - start))s, CPU busy $busy, saturated $saturated (exit $rc)"
	exit "$rc"
	;;
report)
	[ -f "$record" ] || exit 0
	first=$(awk -F'\t' 'NR == 2 { print $2 }' "$record")
	echo "Phases of this run (start and seconds; CPU of the whole machine, $(nproc) cores):"
	awk -F'\t' -v first="${first:-0}" 'NR == 1 { printf "%-14s %8s %8s %6s %10s\n", $1, "start", $3, $4, $5; next }
		{ printf "%-14s %7ds %7ds %6s %10s\n", $1, $2 - first, $3, $4, $5 }' "$record"
	;;
*)
	echo "usage: $0 reset | run NAME CMD... | report" >&2
	exit 2
	;;
esac
