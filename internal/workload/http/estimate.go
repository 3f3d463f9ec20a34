package http

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"storebench/internal/study"
	"storebench/internal/sweep"
	"storebench/internal/workload"
)

// slowRate is the requests a second a step of requests is counted at:
// the slowest kept is Node.js without keep-alive at 100 connections,
// 435.1 requests/s (docs/runs/web-http-seed-2, on the 2-vCPU machine the
// docs' runs are from; the other kept steps, Apache, nginx and Node.js at
// 100 and 500 connections, 500 to 20,000 requests, ran at 1,045 to
// 44,454), rounded down.
const slowRate = 400

// timeoutsPerRequest bounds one request, whatever the server does, in
// timeouts: each of a dial, a TLS handshake and an exchange ends within
// one, and a request on a kept-alive connection the server closed is
// tried once more on a fresh one (its exchange, then a dial, a handshake
// and an exchange).
const timeoutsPerRequest = 4

// Estimate is the workload's cost on one target: its steps as the
// coordinator plans them (each keep-alive value's phase at each request
// count, and every concurrency level of the entry's sweep), each its
// duration when one is set (a request in flight then is cut), else its
// requests at slowRate, or, when shorter, its requests in rounds of the
// step's connections, each round at most timeoutsPerRequest timeouts (a
// bound that holds whatever the server's pace). It writes nothing: no
// disk.
func (HTTP) Estimate(s workload.Planning, e study.Entry, raw json.RawMessage) (workload.Estimate, error) {
	return sweep.Estimate(s, e, HTTP{}, raw, Params.estimate)
}

func (p Params) estimate(steps []workload.Step) workload.Estimate {
	var (
		e                      workload.Estimate
		requests               int64
		byRate, byTimeout      int
		phases, levels         []string
		seenPhase, seenLevel   = map[string]bool{}, map[string]bool{}
		timed                  int
		timedTime, countedTime time.Duration
	)
	timeout := time.Duration(p.Timeout)
	for _, st := range steps {
		if !seenPhase[st.Phase] {
			seenPhase[st.Phase] = true
			phases = append(phases, st.Phase)
		}
		conns := max(st.Concurrency, 1)
		if c := strconv.Itoa(conns); !seenLevel[c] {
			seenLevel[c] = true
			levels = append(levels, c)
		}
		d := time.Duration(p.Duration)
		if st.Duration > 0 {
			d = st.Duration
		}
		if d > 0 {
			timed++
			timedTime += d
			continue
		}
		n := p.stepRequests(st)
		requests += n
		rate := time.Duration(float64(n) / slowRate * float64(time.Second))
		rounds := (n + int64(conns) - 1) / int64(conns)
		bound := time.Duration(rounds) * timeoutsPerRequest * timeout
		if bound < rate {
			byTimeout++
			countedTime += bound
		} else {
			byRate++
			countedTime += rate
		}
	}
	e.Time = timedTime + countedTime
	what := fmt.Sprintf("%d step(s) (%s at %s connections)", len(steps), strings.Join(phases, ", "), strings.Join(levels, ", "))
	var how []string
	if timed > 0 {
		how = append(how, fmt.Sprintf("%d of %s each, its duration", timed, round(time.Duration(p.Duration))))
	}
	if byRate > 0 || byTimeout > 0 {
		h := fmt.Sprintf("%s requests in all at %d requests/s (the slowest kept, rounded down: Node.js without keep-alive, docs/runs/web-http-seed-2), %s", study.FormatCount(requests), slowRate, round(countedTime))
		if byTimeout > 0 {
			h += fmt.Sprintf(", %d step(s) of them bound instead by their rounds of requests at %d timeouts of %s each", byTimeout, timeoutsPerRequest, timeout)
		}
		how = append(how, h)
	}
	e.How = what + ": " + strings.Join(how, "; ") + "; disk: none (nothing is written)"
	return e
}

// stepRequests is step st's request count, as Execute takes it.
func (p Params) stepRequests(st workload.Step) int64 {
	var n int64
	if len(p.Requests) > 0 {
		n = int64(p.Requests[0])
	}
	if v := st.Labels.Int(LRequests); v > 0 {
		n = v
	}
	return n
}

func round(d time.Duration) time.Duration {
	if d > time.Hour {
		return d.Round(time.Minute)
	}
	if d > time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}
