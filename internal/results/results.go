// Package results defines results.json, the versioned record of one study
// run (documented in docs/results-schema.md). The worker fills Step values,
// the coordinator assembles a Run, and the report is rendered from a Run
// alone, so `storebench report DIR` can re-render any finished run.
package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"storebench/internal/measure/latency"
	"storebench/internal/measure/procstat"
	"storebench/internal/redact"
	"storebench/internal/safefile"
	"storebench/internal/study"
	"storebench/internal/sysinfo"
)

// SchemaVersion changes whenever a field changes meaning or disappears.
// Version 2 moved the ADS root hashes (root, roots_digest) from the step's
// root into Facts, which the workload owns; version 3 writes a run under
// way as "running" (no finish time) with its Plan, and a run the user
// stopped as "interrupted" (version 2: "partial"); version 4 adds the
// projection (what the run's measurements cost for the study's sizing);
// version 5 calls goroutines so, "worker" being a worker process only: a
// stream's "goroutines" (version 4: "workers") and the ledger stress's
// and tripcache's metric "goroutines" (version 4: "workers"). Read
// upgrades versions 1 to 4.
const SchemaVersion = 5

// Run is a whole study run.
type Run struct {
	SchemaVersion int       `json:"schema_version"`
	Study         string    `json:"study"`
	Title         string    `json:"title"`
	StudyFile     string    `json:"study_file"`
	StudySource   string    `json:"study_source"`
	Command       []string  `json:"command"`
	Started       time.Time `json:"started"`
	// Finished is absent while the run is under way.
	Finished time.Time `json:"finished,omitzero"`
	// Status: running (written so until the run ends; read back as
	// interrupted), complete, partial (a limit hit), interrupted (by the
	// user, or it never finished) or failed (a target failed; the others
	// still ran).
	Status      string          `json:"status"`
	Reason      string          `json:"reason,omitempty"`
	Storebench  string          `json:"storebench_version"`
	Host        sysinfo.Host    `json:"host"`
	Storage     sysinfo.Storage `json:"storage"`
	Seed        int64           `json:"seed"`
	Durability  string          `json:"durability"`
	Concurrency int             `json:"concurrency"`
	// WorkloadConcurrency is the concurrency of each workload whose study
	// entry sets its own (its phases' own steps ran at it, not at
	// Concurrency).
	WorkloadConcurrency map[string]int `json:"workload_concurrency,omitempty"`
	Ladder              []int64        `json:"ladder"`
	Targets             []*Target      `json:"targets"`
	// Constraints are the study's (nil: none given); the report ranks
	// the targets against them.
	Constraints *study.Constraints `json:"constraints,omitempty"`
	// Projection is the machines and monthly cost the run's measurements
	// project for the study's sizing (nil: none given; see
	// projection.go).
	Projection *Projection `json:"projection,omitempty"`
	// Plan is the targets and steps the run set out to run, written
	// before anything runs (nil in files of earlier versions).
	Plan *Plan `json:"plan,omitempty"`
	// PID and PIDStart identify the storebench process that ran it (on
	// Host), so that a file that says "running" is told apart: still under
	// way, or left by a process that is gone.
	PID      int    `json:"pid,omitempty"`
	PIDStart uint64 `json:"pid_start,omitempty"`
}

// Target is everything measured on one target.
type Target struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	// Machine is the machine shape the target ran on (issue 35), as
	// package machine writes it ("cpus=0.5,memory=256MiB"); "" for this
	// machine as it is. A study with machines runs each target once per
	// machine: Name is then "<target>@<machine>" and Title says "on".
	Machine  string            `json:"machine,omitempty"`
	Settings map[string]string `json:"settings"`
	// Status: ok, failed, partial (a limit), interrupted, unavailable,
	// skipped (never ran: the run was stopped first); while the run is
	// under way also pending and running.
	Status string  `json:"status"`
	Reason string  `json:"reason,omitempty"`
	Steps  []*Step `json:"steps"`
	// NA are the study's steps this target cannot run (it lacks what they
	// require), each with the reason; they are "n/a" in every table, not
	// failures.
	NA []NA `json:"not_applicable,omitempty"`
	// NotRun are the planned steps an interrupted target never ran,
	// each with status "not run".
	NotRun []NA `json:"not_run,omitempty"`
	// Searches are the sustainable-rate searches run on this target, one
	// per searched phase and size, each with its curve of trials.
	Searches []RateSearch `json:"rate_searches,omitempty"`
	// Server describes the server behind a server target (nil for
	// embedded engines): managed by storebench or external (by URI).
	Server *Server `json:"server,omitempty"`
	// WorkerPID and Log locate the worker process and its stderr log.
	WorkerPID int    `json:"worker_pid,omitempty"`
	Log       string `json:"log,omitempty"`
	// Workers are the worker processes that drove the target when there
	// were several or one ran on another host (worker i's log is
	// logs/<target>.w<i>.log, the first's Log).
	Workers []WorkerProc `json:"workers,omitempty"`
}

// WorkerProc is one worker process of a target: where it ran.
type WorkerProc struct {
	Host string `json:"host"`
	PID  int    `json:"pid"`
}

// Step is one phase at one ladder size on one target.
type Step struct {
	Workload string    `json:"workload"`
	Phase    string    `json:"phase"`
	N        int64     `json:"n"`
	Started  time.Time `json:"started"`
	Seconds  float64   `json:"seconds"`
	Ops      int64     `json:"ops"`

	// Labels are the step's identity (see labels.go): workload, phase
	// and n again, and what else sets the step apart (chain length,
	// concurrency level, offered rate, trial). Files without them get
	// them derived on read.
	Labels Labels `json:"labels,omitempty"`

	// Unit names what one op is here ("batch of 100 txns", "select").
	Unit    string          `json:"unit"`
	Latency latency.Summary `json:"latency"`
	// ByOp is the service time per operation type (YCSB: READ, UPDATE...).
	ByOp map[string]latency.Summary `json:"by_op,omitempty"`
	// Intended is the latency from each operation's intended start time
	// (open loop only), with Late the operations that started >1 ms late.
	Intended *latency.Summary `json:"intended,omitempty"`
	Late     int64            `json:"late,omitempty"`
	Rate     float64          `json:"target_rate,omitempty"`
	// Hist and HistIntended are the whole-phase HdrHistograms in the
	// standard compressed encoding (V2), base64 once ("HISTF..."): exact
	// merges across runs and targets remain possible. Files written before
	// this was fixed hold them base64-encoded twice; latency.Decode reads
	// both.
	Hist         string `json:"hist,omitempty"`
	HistIntended string `json:"hist_intended,omitempty"`
	// Series is the per-tick time series.
	Series []Tick `json:"series,omitempty"`
	// Streams are the step's concurrent loads when it ran several (the
	// figures above are all of them together), and Background the jobs
	// that ran beside the load (see streams.go).
	Streams    []Stream     `json:"streams,omitempty"`
	Background []Background `json:"background,omitempty"`
	Verify     Verify       `json:"verify"`
	// Metrics holds the workload's own figures, typed (unit, direction,
	// how they combine) by what the workload registers in package
	// report/section.
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Facts holds the workload's own figures that are not numbers (an
	// authenticated store's root hash: package workload/roots).
	Facts map[string]string `json:"facts,omitempty"`
	// Resources are the worker's: the whole target for an embedded
	// engine, the client for a server target.
	Resources Resources `json:"resources"`
	// ServerResources are a managed server's own (process tree, data
	// directory), so a report can tell whose CPU ran out.
	ServerResources *Resources `json:"server_resources,omitempty"`
	// Nodes are a cluster's nodes' own resources at the end of the step
	// (ServerResources is their sum).
	Nodes []NodeResources `json:"nodes,omitempty"`
	// Events are the fault actions taken on a cluster's nodes during the
	// step (stop, kill, pause, resume, restart), in time order.
	Events  []Event `json:"events,omitempty"`
	Partial bool    `json:"partial,omitempty"`
	Error   string  `json:"error,omitempty"`
	// Retried counts the requests the target's client retried after
	// the server answered them with a timeout (target.Retrier): the
	// operations' latencies include the retries.
	Retried int64 `json:"retried,omitempty"`
	// ByOpHist are ByOp's histograms, encoded as Hist: what lets the
	// steps of several workers merge exactly per operation type.
	ByOpHist map[string]string `json:"by_op_hist,omitempty"`
	// Workers, when several worker processes shared the step, is what
	// each did (its share of Ops, its own resources, where it ran); the
	// figures above are all of them merged (histograms exactly, per
	// interval by absolute time) and Resources their sum.
	Workers []WorkerPart `json:"workers,omitempty"`
	// Unsplit says why a step of a study with several workers ran on one
	// of them alone (its workload does not split).
	Unsplit string `json:"unsplit,omitempty"`
	// Intervals are per-tick encoded histograms; they cross the wire from
	// the worker and go to the .hlog files, not to results.json (the
	// coordinator clears them before writing it).
	Intervals []Interval `json:"intervals,omitempty"`
}

// WorkerPart is one worker process's share of a step it shared.
type WorkerPart struct {
	Index   int             `json:"index"`
	Host    string          `json:"host"`
	PID     int             `json:"pid,omitempty"`
	Ops     int64           `json:"ops"`
	Seconds float64         `json:"seconds"`
	OpsPerS float64         `json:"ops_per_s"`
	Late    int64           `json:"late,omitempty"`
	Latency latency.Summary `json:"latency"`
	// Hist and HistIntended are this worker's own histograms: merging
	// the workers' gives the step's.
	Hist         string    `json:"hist,omitempty"`
	HistIntended string    `json:"hist_intended,omitempty"`
	Verified     int64     `json:"verified,omitempty"`
	Resources    Resources `json:"resources"`
}

// Server is the server behind a server target.
type Server struct {
	Name     string            `json:"name"`
	Managed  bool              `json:"managed"`
	URI      string            `json:"uri"` // password redacted
	Version  string            `json:"version,omitempty"`
	PID      int               `json:"pid,omitempty"`
	Settings map[string]string `json:"settings,omitempty"`
	Log      string            `json:"log,omitempty"`
}

// Footprint is the resources that stand for the target in reports: the
// server's when storebench runs it, the worker's otherwise.
func (s *Step) Footprint() Resources {
	if s.ServerResources != nil {
		return *s.ServerResources
	}
	return s.Resources
}

// Interval is one tick's histograms, for HDR log files: the service time
// and, in open loop, the latency from the intended start.
type Interval struct {
	StartMs int64  `json:"start_ms"`
	LenMs   int64  `json:"len_ms"`
	MaxNs   int64  `json:"max_ns"`
	Hist    string `json:"hist"`
	// Open loop only.
	MaxIntendedNs int64  `json:"max_intended_ns,omitempty"`
	HistIntended  string `json:"hist_intended,omitempty"`
}

// Tick is one point of a phase's time series. P50, P99 and Max are service
// time (from each operation's actual start); in open loop IntendedP99 and
// IntendedMax are latency from each operation's intended start, which
// includes the time it waited behind a slow target.
type Tick struct {
	T           float64 `json:"t_s"`
	Ops         int64   `json:"ops"`
	OpsPerS     float64 `json:"ops_per_s"`
	P50         int64   `json:"p50_ns"`
	P99         int64   `json:"p99_ns"`
	Max         int64   `json:"max_ns"`
	IntendedP99 int64   `json:"intended_p99_ns,omitempty"`
	IntendedMax int64   `json:"intended_max_ns,omitempty"`
	RSSBytes    int64   `json:"rss_bytes,omitempty"`
	CPU         float64 `json:"cpu_percent,omitempty"`
	// Late is the operations of the tick that started late (open loop):
	// a count that keeps growing is a queue that builds.
	Late int64 `json:"late,omitempty"`
	// Counts are a workload's own counts over the tick, by name (oltp:
	// reads, writes, other statements, ignored errors, reconnects).
	Counts map[string]int64 `json:"counts,omitempty"`
}

// Event is one fault action on a cluster node during a step.
type Event struct {
	// Time is when the action began; TookSeconds how long it took (a
	// restart: until the node was back in the cluster).
	Time        time.Time `json:"time"`
	OffsetS     float64   `json:"offset_s"` // from the step's Started
	TookSeconds float64   `json:"took_s,omitempty"`
	Action      string    `json:"action"`
	Node        int       `json:"node"`
	NodeName    string    `json:"node_name"`
	Error       string    `json:"error,omitempty"`
}

// NodeResources is one cluster node's process and data at the end of a
// step, with its CPU over the step.
type NodeResources struct {
	Name          string  `json:"name"`
	Addr          string  `json:"addr"`
	Role          string  `json:"role,omitempty"`
	PID           int     `json:"pid"`
	RSSBytes      int64   `json:"rss_bytes"`
	PeakRSSBytes  int64   `json:"peak_rss_bytes"`
	CPUPercent    float64 `json:"cpu_percent"`
	DiskAllocated int64   `json:"disk_allocated_bytes"`
	DiskApparent  int64   `json:"disk_apparent_bytes"`
}

// Verify says how much of what a phase read was checked against what was
// written, and what failed.
type Verify struct {
	Checked int64  `json:"checked"`
	Failed  int64  `json:"failed"`
	First   string `json:"first_failure,omitempty"`
}

// Resources is the target process's footprint around a step.
type Resources struct {
	Before procstat.Snapshot `json:"before"`
	After  procstat.Snapshot `json:"after"`
	// CPUPercent over the step (100 = one core busy).
	CPUPercent float64 `json:"cpu_percent"`
	// DiskAllocated counts blocks actually allocated (what du says);
	// DiskApparent sums file sizes.
	DiskAllocated int64 `json:"disk_allocated_bytes"`
	DiskApparent  int64 `json:"disk_apparent_bytes"`
	// CacheResident is the bytes of the target's files in the page cache
	// (the seed's "ca"), out of CacheTotal bytes of files.
	CacheResident int64 `json:"page_cache_bytes"`
	CacheTotal    int64 `json:"files_bytes"`
	// Device*Bytes are what the block device holding the data read and
	// wrote during the step, all processes together: what reached the
	// disk, where a process's write_bytes counts pages as they are
	// dirtied (and can count one page many times).
	Device           string `json:"device,omitempty"`
	DeviceReadBytes  int64  `json:"device_read_bytes,omitempty"`
	DeviceWriteBytes int64  `json:"device_write_bytes,omitempty"`
	// Seconds is the wall time between Before and After, over which the
	// byte and CPU counters above were counted: the whole step, setup
	// and the sync after it included (not the step's timed Seconds).
	Seconds float64 `json:"seconds,omitempty"`
	// Timed is the same counters over the timed part of the step alone
	// (nil where it was not measured: a server's own resources, which
	// the coordinator samples around the whole step, and results of
	// older storebench versions).
	Timed *Window `json:"timed,omitempty"`
}

// Window is a process's CPU and I/O between two samples taken around the
// timed part of a step: a step's setup (building the view the balance
// phase reads, the chain a chain select walks) and the sync after it are
// outside. Bytes and Seconds come from the same two samples, so
// bytes/Seconds is a rate of that interval.
type Window struct {
	Seconds          float64           `json:"seconds"`
	Before           procstat.Snapshot `json:"before"`
	After            procstat.Snapshot `json:"after"`
	CPUPercent       float64           `json:"cpu_percent"`
	Device           string            `json:"device,omitempty"`
	DeviceReadBytes  int64             `json:"device_read_bytes,omitempty"`
	DeviceWriteBytes int64             `json:"device_write_bytes,omitempty"`
}

// NewWindow is the window between two samples of a process and of the
// device holding its data (devices with no name: not measured).
func NewWindow(before, after procstat.Snapshot, devBefore, devAfter procstat.DeviceIO) *Window {
	w := &Window{Before: before, After: after, CPUPercent: procstat.CPUPercent(before, after)}
	w.Seconds = after.At.Sub(before.At).Seconds()
	if devBefore.Device != "" && devAfter.Device == devBefore.Device {
		w.Device = devAfter.Device
		w.DeviceReadBytes = devAfter.ReadBytes - devBefore.ReadBytes
		w.DeviceWriteBytes = devAfter.WriteBytes - devBefore.WriteBytes
	}
	return w
}

// SetDevice records the device I/O between two samples.
func (r *Resources) SetDevice(before, after procstat.DeviceIO) {
	if after.Device == "" && after.WriteBytes == 0 {
		return
	}
	r.Device = after.Device
	r.DeviceReadBytes = after.ReadBytes - before.ReadBytes
	r.DeviceWriteBytes = after.WriteBytes - before.WriteBytes
}

// Interval is the wall time the counters of r were counted over: Seconds,
// or for results of older versions the time between the two snapshots.
func (r *Resources) Interval() float64 {
	if r.Seconds > 0 {
		return r.Seconds
	}
	if !r.Before.At.IsZero() && r.After.At.After(r.Before.At) {
		return r.After.At.Sub(r.Before.At).Seconds()
	}
	return 0
}

// NA is one step a target cannot run: status "n/a" and why.
type NA struct {
	Workload string `json:"workload"`
	Phase    string `json:"phase"`
	N        int64  `json:"n"`
	Labels   Labels `json:"labels,omitempty"`
	Status   string `json:"status"` // "n/a" (Target.NA) or "not run" (Target.NotRun)
	Reason   string `json:"reason"`
}

// NotApplicable returns why the target cannot run a step of workload and
// phase at size n (n < 0: at any size), "" if it can or nothing says so.
func (t *Target) NotApplicable(workload, phase string, n int64) string {
	for _, x := range t.NA {
		if x.Workload == workload && (phase == "" || x.Phase == phase) && (n < 0 || x.N == n) {
			return x.Reason
		}
	}
	return ""
}

// Find returns the first step of a target matching workload, phase and n
// (n < 0 matches any size).
func (t *Target) Find(workload, phase string, n int64) *Step {
	for _, s := range t.Steps {
		if s.Workload == workload && s.Phase == phase && (n < 0 || s.N == n) {
			return s
		}
	}
	return nil
}

// Write stores the run as indented JSON. Every string of the run is
// masked first (redact.Value): whatever field an error, a setting or a
// URI reached, no secret reaches the file, nor the reports made from r.
func (r *Run) Write(path string) error {
	redact.Value(r)
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := WriteFileAtomic(path, append(b, '\n')); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// WriteFileAtomic replaces path with b whole or not at all: it writes a
// temporary file beside it (created exclusively, never through a
// symbolic link), syncs it, and renames it over path (a link at path is
// replaced, not written through). On any error (a full disk) the
// temporary file is removed and the previous path, if any, is left as it
// was: a reader never sees a truncated file.
func WriteFileAtomic(path string, b []byte) error {
	return safefile.WriteFileAtomic(path, b, 0o644)
}

// MaxBytes is the most a results.json may have: a run of thousands of
// steps with their histograms and per-second series is tens of MiB.
// Anything larger (or /dev/zero, a FIFO) is refused before it is read, as
// study files are (study.MaxFileBytes).
const MaxBytes = 256 << 20

// Read loads a results.json. It reads only a regular file (not a symbolic
// link, FIFO or device) of at most MaxBytes: every error is one line
// naming the file.
func Read(path string) (*Run, error) {
	b, err := safefile.ReadRegular(filepath.Dir(path), filepath.Base(path), MaxBytes)
	if err != nil {
		var tl *safefile.TooLargeError
		switch {
		case errors.As(err, &tl):
			return nil, fmt.Errorf("%s: %s, over the %s a results file may have", path, safefile.Size(tl.Size), safefile.Size(MaxBytes))
		case errors.Is(err, safefile.ErrLink):
			return nil, fmt.Errorf("%s: a symbolic link: storebench reads a run's results.json only as a regular file in its directory (name the file it points to)", path)
		case errors.Is(err, safefile.ErrNotRegular):
			var pe *fs.PathError
			why := err.Error()
			if errors.As(err, &pe) {
				why = pe.Err.Error()
			}
			return nil, fmt.Errorf("%s: %s; a results.json must be one", path, why)
		}
		return nil, fmt.Errorf("read results: %w", err)
	}
	r, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Decode parses a results.json of this schema version or an earlier one,
// upgrading it to this version's shape. Every control character of its
// strings (ESC, CR, C1...; not line feed or tab) is escaped to its visible
// form (EscapeControl).
func Decode(b []byte) (*Run, error) {
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("not a storebench results file: %w", err)
	}
	if r.SchemaVersion == 0 || r.SchemaVersion > SchemaVersion {
		return nil, fmt.Errorf("results schema version %d is not one this storebench reads (1 to %d)", r.SchemaVersion, SchemaVersion)
	}
	if r.SchemaVersion == 1 {
		if err := upgrade1(b, &r); err != nil {
			return nil, err
		}
	}
	if r.SchemaVersion == 2 {
		upgrade2(&r)
	}
	// Version 3 has the shape of 4 but for the projection it lacks.
	if r.SchemaVersion == 3 {
		r.SchemaVersion = 4
	}
	if r.SchemaVersion == 4 {
		upgrade4(&r)
	}
	r.label()
	r.settle()
	// Whoever shared the file chose its strings: none reaches a terminal
	// or a report with a control character in it (clean.go).
	r.escapeControls()
	return &r, nil
}

// upgrade1 moves what version 1 kept in fields of the step's root into
// their version 2 places: root and roots_digest into Facts.
func upgrade1(b []byte, r *Run) error {
	var v1 struct {
		Targets []struct {
			Steps []struct {
				Root        string `json:"root"`
				RootsDigest string `json:"roots_digest"`
			} `json:"steps"`
		} `json:"targets"`
	}
	if err := json.Unmarshal(b, &v1); err != nil {
		return fmt.Errorf("not a storebench results file (version 1): %w", err)
	}
	for i, t := range v1.Targets {
		if i >= len(r.Targets) || r.Targets[i] == nil {
			break
		}
		for j, s := range t.Steps {
			if j >= len(r.Targets[i].Steps) || r.Targets[i].Steps[j] == nil {
				break
			}
			st := r.Targets[i].Steps[j]
			for k, v := range map[string]string{"root": s.Root, "roots_digest": s.RootsDigest} {
				if v == "" {
					continue
				}
				if st.Facts == nil {
					st.Facts = map[string]string{}
				}
				st.Facts[k] = v
			}
		}
	}
	r.SchemaVersion = 2
	return nil
}

// upgrade4 renames what version 4 called workers and version 5
// goroutines: the metric of the ledger's stress steps and of tripcache's
// steps ("worker" is a worker process only). A stream's goroutines are
// read by Stream.UnmarshalJSON, from a file of any version.
func upgrade4(r *Run) {
	for _, t := range r.Targets {
		for _, st := range t.Steps {
			if st == nil || !(st.Workload == "ledger" && st.Phase == "stress" || st.Workload == "tripcache") {
				continue
			}
			if v, ok := st.Metrics["workers"]; ok {
				if _, has := st.Metrics["goroutines"]; !has {
					st.Metrics["goroutines"] = v
				}
				delete(st.Metrics, "workers")
			}
		}
	}
	r.SchemaVersion = SchemaVersion
}
