package coordinator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"storebench/internal/redact"
	"storebench/internal/study"
	"storebench/internal/target"
)

// A server named by URI is someone else's: storebench writes there only
// under its own key prefixes (tables, collections), removes only what it
// wrote, and refuses a database that already holds anything unless
// --allow-nonempty names the target (CheckExternal).

// external reports whether the target runs on a server named by URI,
// one storebench did not start.
func (r *targetRun) external() bool { return !r.info.Embedded() && r.srv == nil && r.uri != "" }

// externalTimeout bounds the check of a server named by URI and the
// removal of what a run wrote there.
const externalTimeout = 10 * time.Minute

// CheckExternal asks every server the study names by URI what its
// database holds, before anything runs: one that holds anything is
// refused (a study error, exit 2) unless allow names it (its target's
// name, the study's name for it, or its URI); one allowed is still
// refused if it holds data under storebench's own names, which a run
// would overwrite and then delete. A server that cannot be reached is
// left to the run, which fails it on opening.
func CheckExternal(ctx context.Context, s *study.Study, plan *Plan, allow []string) error {
	for i, t := range s.Targets {
		if i >= len(plan.Targets) {
			break
		}
		info := plan.Targets[i]
		if t.URI == "" || info.Embedded() || info.Open == nil {
			continue
		}
		h, err := info.Open(target.Options{URI: t.URI, Durability: durabilityOf(s, info), Extra: t.Options, Concurrency: 1, External: true})
		if err != nil {
			continue
		}
		occ, ok := h.(target.Occupant)
		if !ok {
			_ = h.Close()
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, externalTimeout)
		o, err := occ.Occupancy(cctx)
		cancel()
		_ = h.Close()
		field := fmt.Sprintf("targets[%d]", i)
		uri := redact.Text(t.URI)
		if err != nil {
			return &study.Error{File: s.File, Line: s.Line(field), Field: field,
				Msg: fmt.Sprintf("%s: cannot tell what %s holds (%v); storebench runs on a server it did not start only once it knows it writes beside nobody's data", t.Name, uri, target.OneLine(redact.Scrub(t.URI, err.Error())))}
		}
		allowed := allows(allow, t.Name, info.Name, t.URI)
		switch {
		case !allowed && o.Foreign+o.Own > 0:
			return &study.Error{File: s.File, Line: s.Line(field), Field: field,
				Msg: fmt.Sprintf("%s holds %d %s that storebench did not write; give --allow-nonempty %s to run beside them (storebench then writes under its own prefix and removes only what it wrote)", uri, o.Foreign+o.Own, o.Unit, t.Name)}
		case o.Own > 0:
			return &study.Error{File: s.File, Line: s.Line(field), Field: field,
				Msg: fmt.Sprintf("%s holds %d %s under storebench's own names (%s), which a run would overwrite and then delete; remove them, or name another database", uri, o.Own, o.Unit, strings.Join(o.OwnNames, ", "))}
		}
	}
	return nil
}

// allows reports whether the --allow-nonempty values name a target by
// one of names (its name in the study, its target's name, its URI).
func allows(allow []string, names ...string) bool {
	for _, a := range allow {
		for _, n := range names {
			if a != "" && a == n {
				return true
			}
		}
	}
	return false
}

// cleanExternal removes what the run wrote on a server named by URI
// (Cleaner, or else Reset, on a handle opened here), also after an
// interrupt: the workers have quit, and nothing else of the database is
// touched.
func (r *targetRun) cleanExternal() {
	h, err := r.info.Open(target.Options{URI: r.uri, Durability: durabilityOf(r.s, r.info), Extra: r.t.Options, Concurrency: 1, External: true})
	if err != nil {
		r.o.notice(r.t.Name, fmt.Sprintf("could not remove what it wrote on %s: %v", redact.Text(r.uri), err))
		return
	}
	defer func() { _ = h.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), externalTimeout)
	defer cancel()
	switch c := h.(type) {
	case target.Cleaner:
		err = c.Cleanup(ctx)
	case target.Resetter:
		err = c.Reset(ctx)
	default:
		return
	}
	if err != nil {
		r.o.notice(r.t.Name, fmt.Sprintf("could not remove what it wrote on %s: %s", redact.Text(r.uri), target.OneLine(redact.Scrub(r.uri, err.Error()))))
	}
}
