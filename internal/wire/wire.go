// Package wire is the coordinator–worker protocol: JSON lines. The
// coordinator writes one Request per line to the worker's stdin; the
// worker writes one Event per line to its stdout (stderr is its log).
// Everything that crosses is plain data (no file paths are read by the
// other side), so a worker could run on another host over any byte stream.
// See docs/protocol.md.
package wire

import (
	"time"

	"storebench/internal/measure/procstat"
	"storebench/internal/results"
	"storebench/internal/workload"
)

// Version of the protocol; the worker states it in its hello. Version 2
// added heartbeats (a coordinator fails a worker that falls silent) and
// protocol errors; version 3 the barrier (ready, start) of a step shared
// by several workers.
const Version = 3

// HeartbeatEvery is how often a worker that is handling a request says it
// is alive; the coordinator fails a worker it has not heard from for much
// longer than that.
const HeartbeatEvery = time.Second

// Commands.
const (
	CmdOpen    = "open"    // open (or create) the target's store
	CmdStep    = "step"    // run one workload step; progress events, then done
	CmdSample  = "sample"  // report the worker's resources now
	CmdClose   = "close"   // close the store, keep its data
	CmdDestroy = "destroy" // close the store and delete its data directory
	CmdCancel  = "cancel"  // cancel the running step (it ends with Partial)
	CmdQuit    = "quit"    // close everything and exit 0
	// CmdStart releases a step's barrier: every worker of a target said
	// it is ready (EvReady) and all begin at Request.Start. Like cancel
	// it is handled beside the running step, not queued behind it.
	CmdStart = "start"
)

// Event types.
const (
	EvHello    = "hello"    // sent once at start, unsolicited (ID 0)
	EvProgress = "progress" // a running step's progress
	EvDone     = "done"     // the request finished; payload by command
	EvError    = "error"    // the request failed; Error says why
	// EvHeartbeat is sent at least every HeartbeatEvery while a request is
	// being handled, with the request's ID: proof that the worker is alive
	// when a step is quiet (building a view, emptying a server, syncing).
	EvHeartbeat = "heartbeat"
	// EvProtocolError (ID 0) says the worker could not read a request line
	// at all, not even its ID: the request in flight will never be
	// answered, so the coordinator fails the worker.
	EvProtocolError = "protocol_error"
	// EvReady (with the step's ID) says a worker that shares its step with
	// others (Step.Parts > 1) reached a barrier: its setup is done and it
	// waits for a start request.
	EvReady = "ready"
)

// Request is one command.
type Request struct {
	ID   int64          `json:"id"`
	Cmd  string         `json:"cmd"`
	Open *OpenArgs      `json:"open,omitempty"`
	Step *workload.Step `json:"step,omitempty"`
	// Profile, on a step, asks the worker for pprof profiles of the step
	// (ProfileKinds); they come back in the step's done or error event.
	Profile []string `json:"profile,omitempty"`
	// Start, on a start request, is the instant every worker of the
	// step begins (wall clock; hosts must keep their clocks in step).
	Start time.Time `json:"start,omitempty"`
}

// ProfileKinds are the profiles a step can ask for. Mutex and block
// sampling is switched on only while a step that asks for it runs: it
// costs the load goroutines time of their own.
var ProfileKinds = []string{"cpu", "mutex", "block"}

// OpenArgs says which target to open and how.
type OpenArgs struct {
	Target     string            `json:"target"`
	Dir        string            `json:"dir,omitempty"`
	URI        string            `json:"uri,omitempty"`
	Durability string            `json:"durability"`
	CacheBytes int64             `json:"cache_bytes,omitempty"`
	Options    map[string]string `json:"options,omitempty"`
	// Concurrency is the most load goroutines any step will drive.
	Concurrency int `json:"concurrency,omitempty"`
	// External: the server is named by URI, not started by storebench
	// (target.Options.External).
	External bool `json:"external,omitempty"`
	// ClientCPUs > 0 sets the worker's GOMAXPROCS (the study's
	// client_cpus).
	ClientCPUs int `json:"client_cpus,omitempty"`
}

// Event is one message from the worker.
type Event struct {
	ID       int64         `json:"id"`
	Type     string        `json:"type"`
	Hello    *Hello        `json:"hello,omitempty"`
	Progress *Progress     `json:"progress,omitempty"`
	Opened   *Opened       `json:"opened,omitempty"`
	Step     *results.Step `json:"step,omitempty"`
	Sample   *Sample       `json:"sample,omitempty"`
	// Profiles of a step that asked for them: kind -> the profile in
	// pprof's format (gzipped protobuf), as go tool pprof reads it.
	Profiles map[string][]byte `json:"profiles,omitempty"`
	Error    string            `json:"error,omitempty"`
	// Timed, on a ready event, says the barrier is the one right before
	// a timed part (the coordinator times fault actions from its start).
	Timed bool `json:"timed,omitempty"`
}

// Hello introduces the worker.
type Hello struct {
	Protocol  int    `json:"protocol"`
	PID       int    `json:"pid"`
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
}

// Progress of a running step.
type Progress struct {
	Done  int64 `json:"done"`
	Total int64 `json:"total"`
}

// Opened describes the store that was opened.
type Opened struct {
	Title    string            `json:"title"`
	Version  string            `json:"version"`
	Kind     string            `json:"kind"`
	Settings map[string]string `json:"settings"`
}

// Sample is the worker's footprint at one moment.
type Sample struct {
	Process       procstat.Snapshot `json:"process"`
	DiskAllocated int64             `json:"disk_allocated_bytes"`
	CacheResident int64             `json:"page_cache_bytes"`
}
