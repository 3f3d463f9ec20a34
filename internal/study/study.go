// Package study reads, validates and overrides study files: the YAML that
// names the workloads, the targets, the data-size ladder and the limits of
// one engine-selection study.
package study

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"gopkg.in/yaml.v3"

	"storebench/internal/redact"
	"storebench/studies"
)

// Study is one parsed study file.
type Study struct {
	Name        string `yaml:"name"`
	Title       string `yaml:"title"`
	Description string `yaml:"description"`
	Seed        int64  `yaml:"seed"`
	// SeedStudy names the seed study this one reproduces ("000".."004"):
	// the report sets the seed's own figures (studies/seeds/NNN.yaml)
	// beside ours, with a computed verdict per finding.
	SeedStudy   string `yaml:"seed_study"`
	Durability  string `yaml:"durability"`
	Concurrency int    `yaml:"concurrency"`
	// Workers is the number of worker processes that drive each target
	// at once (default 1), placed round-robin on Hosts (default: this
	// machine): see docs/distributed.md.
	Workers int `yaml:"workers"`
	// ClientCPUs bounds the CPUs each worker process's load goroutines
	// run on (GOMAXPROCS; 0: every core). On a machine whose cores the
	// server shares, a client spread over every core takes them from the
	// server: a side-by-side run with a native tool gives each the same
	// number of threads (redis-benchmark runs one).
	ClientCPUs int `yaml:"client_cpus"`
	// Hosts are where workers run: "local" (this machine) or
	// ssh://[user@]host[:port].
	Hosts []string `yaml:"hosts"`
	// Machines are the machine shapes every target runs on, each once,
	// on a fresh worker or server with fresh data (issue 35): limits as
	// package machine parses them, e.g. "cpus=0.5,memory=256MiB". Empty:
	// this machine as it is. Checked when the study is prepared.
	Machines []string `yaml:"machines"`
	// SSH is how remote hosts are reached (keys from ssh-agent or ~/.ssh
	// unless Identity names one; never a password).
	SSH       SSH      `yaml:"ssh"`
	Ladder    []Count  `yaml:"ladder"`
	Limits    Limits   `yaml:"limits"`
	Targets   []Target `yaml:"targets"`
	Workloads []Entry  `yaml:"workloads"`
	// Constraints the report judges the targets by (see constraints.go).
	Constraints *Constraints `yaml:"constraints"`
	// Sizing is the user's load and data the run is priced for (see
	// sizing.go): the report's "What it costs".
	Sizing *Sizing `yaml:"sizing"`
	// Scales are named sets of overrides chosen with --scale (see scale.go).
	Scales map[string]Scale `yaml:"scales"`

	// File is where the study came from ("builtin:ledger" or a path);
	// Source is its text, recorded in every result.
	File   string `yaml:"-"`
	Source string `yaml:"-"`

	// root is the parsed file, kept so that errors found after decoding
	// can name their line (see Line); overrides records what the command
	// line and the chosen scale changed, so that such errors name the flag
	// instead (see Locate).
	root      *yaml.Node
	overrides []override
}

// SSH options for remote workers.
type SSH struct {
	// Identity is a private key file (ssh -i), or the public key of one
	// in ssh-agent: checked to be one before anything starts (CheckFiles).
	Identity string `yaml:"identity"`
	// Options are ssh -o options, "Key=value" each. From a study file only
	// those that tune the connection (fileSSHOptions: ConnectTimeout,
	// Ciphers, ...); --ssh-option may give any (UserKnownHostsFile=/path,
	// ProxyCommand=...), ahead of the file's.
	Options []string `yaml:"options"`
	// CacheDir is where storebench keeps its binary on a remote host
	// (default .cache/storebench, relative to the login directory).
	CacheDir string `yaml:"cache_dir"`
}

// MaxWorkers bounds the worker processes per target.
const MaxWorkers = 256

// Host is one place a worker runs: this machine (Local) or an SSH
// destination.
type Host struct {
	Local bool
	User  string
	Host  string
	Port  int // 0: ssh's default
	// Raw is how the study wrote it.
	Raw string
}

// Dest is the host as ssh takes it ([user@]host).
func (h Host) Dest() string {
	if h.User != "" {
		return h.User + "@" + h.Host
	}
	return h.Host
}

// ParseHost reads "local" or ssh://[user@]host[:port].
func ParseHost(s string) (Host, error) {
	if s == "local" || s == "localhost-process" {
		return Host{Local: true, Raw: s}, nil
	}
	// Errors quote the host with its secrets masked.
	shown := Clip(redact.Text(s))
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "ssh" {
		return Host{}, fmt.Errorf("%q: want local or ssh://[user@]host[:port]", shown)
	}
	if _, set := u.User.Password(); set {
		return Host{}, fmt.Errorf("%q: no password in a host: keys come from ssh-agent, ~/.ssh or ssh.identity", shown)
	}
	if u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#") {
		return Host{}, fmt.Errorf("%q: want ssh://[user@]host[:port] and nothing after it", shown)
	}
	h := Host{Host: u.Hostname(), User: u.User.Username(), Raw: s}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Host{}, fmt.Errorf("%q: port %q: want 1..65535", shown, p)
		}
		h.Port = n
	}
	if strings.HasPrefix(h.Host, "-") || strings.HasPrefix(h.User, "-") {
		return Host{}, fmt.Errorf("%q: a host or user may not start with '-'", shown)
	}
	if hasControl(h.Host) || hasControl(h.User) {
		return Host{}, fmt.Errorf("%q: a control character in the host or user", shown)
	}
	return h, nil
}

// Placement is where each of the study's workers runs: worker i on
// host i mod len(hosts).
func (s *Study) Placement() []Host {
	n := max(s.Workers, 1)
	var hosts []Host
	for _, raw := range s.Hosts {
		h, err := ParseHost(raw)
		if err == nil {
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		hosts = []Host{{Local: true, Raw: "local"}}
	}
	out := make([]Host, n)
	for i := range out {
		out[i] = hosts[i%len(hosts)]
	}
	return out
}

// Limits on what a study may be: a study is a few KiB of text naming a
// handful of sizes; far more is a mistake (or an attack) that would cost
// memory, a header of kilobytes and a run that never ends.
const (
	// MaxFileBytes bounds a study or constraints file.
	MaxFileBytes = 1 << 20
	// MaxLadderSteps bounds the number of ladder sizes.
	MaxLadderSteps = 64
	// MaxLadderSize is the largest data size a ladder may name.
	MaxLadderSize = 1_000_000_000
	// MaxNameLen bounds a study's name, which names its results directory.
	MaxNameLen = 64
)

// seedStudyRE is what seed_study may be: a seed's number.
var seedStudyRE = regexp.MustCompile(`^[0-9]{3}$`)

// nameRE is what a study name may be: it becomes a directory name, so no
// separators, no "." or "..", no leading dot or dash, nothing the file
// system or a shell treats specially.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Limits bound a study run.
type Limits struct {
	// Time is the wall-clock budget of the whole run (0: none).
	Time Duration `yaml:"time"`
	// TargetTime is the budget of each target (0: none): a target that
	// takes longer is stopped and marked partial, and the next one runs,
	// so one pathological engine cannot starve the others.
	TargetTime Duration `yaml:"target_time"`
	// Disk is the most a single target's data directory may hold; the
	// ladder stops for that target when a step would exceed it.
	Disk Bytes `yaml:"disk"`
}

// Target names an engine and its options.
type Target struct {
	Name string `yaml:"name"`
	// URI names an external server (redis://host:6379/0, postgres://...):
	// storebench then measures it but neither starts nor stops it.
	URI     string            `yaml:"uri"`
	Cache   Bytes             `yaml:"cache"`
	Options map[string]string `yaml:"options"`

	// node is where the target is in the study file (nil when the command
	// line added it), so errors about it name its line wherever
	// --targets moved it.
	node *yaml.Node
}

// UnmarshalYAML lets a target be a bare name ("- pebble") or a mapping.
func (t *Target) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		t.Name = n.Value
		return nil
	}
	return fmt.Errorf("a target is a name or a mapping with name, cache, options")
}

// Entry is one workload of the study with its raw parameters; the
// workload decodes them (see DecodeParams) so errors still name the line.
type Entry struct {
	Name   string    `yaml:"name"`
	Params yaml.Node `yaml:"params"`
	// Sweep asks for the generic sweeps any workload gets (a concurrency
	// sweep, a sustainable-rate search); package sweep decodes it.
	Sweep yaml.Node `yaml:"sweep"`
	// Concurrency, when set, replaces the study's concurrency for this
	// workload's steps: one study can then run workloads whose natural
	// loads differ by orders of magnitude (100 HTTP connections, 8 SQL
	// threads) without running each at the others' levels.
	Concurrency int `yaml:"concurrency"`
	// Faults are actions on a cluster target's nodes during a phase
	// (stop, kill, pause, restart); package fault decodes them.
	Faults yaml.Node `yaml:"faults"`
}

// Load reads a study by built-in name or by file path.
func Load(nameOrPath string) (*Study, error) {
	var data []byte
	file := nameOrPath
	if b, err := studies.FS.ReadFile(nameOrPath + ".yaml"); err == nil && !strings.ContainsAny(nameOrPath, "/.") {
		data, file = b, "studies/"+nameOrPath+".yaml"
	} else {
		b, err := readFile(nameOrPath)
		if err != nil {
			if os.IsNotExist(err) && !strings.ContainsAny(nameOrPath, "/.") {
				return nil, &Error{File: nameOrPath, Msg: fmt.Sprintf("no built-in study or file of that name (built-in: %s)", strings.Join(Builtin(), ", "))}
			}
			if os.IsNotExist(err) {
				return nil, &Error{File: nameOrPath, Msg: fmt.Sprintf("cannot read: %v", unwrapPathErr(err))}
			}
			return nil, err
		}
		data = b
	}
	return Parse(file, data)
}

// readFile reads a study or constraints file, reading no more than
// MaxFileBytes of it whatever it is (a huge file, /dev/zero).
//
// A file that is not a regular one (a FIFO, a device, a directory) is
// refused before a byte is read: O_NONBLOCK keeps the open of a FIFO with
// no writer from hanging, and the mode is checked on the open file.
func readFile(path string) ([]byte, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, notRegular(path)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, err
		}
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read: %v", unwrapPathErr(err))}
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, notRegular(path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read: %v", unwrapPathErr(err))}
	}
	if len(data) > MaxFileBytes {
		return nil, tooLarge(path)
	}
	return data, nil
}

func notRegular(file string) error {
	return &Error{File: file, Msg: "not a regular file: name a study file"}
}

func tooLarge(file string) error {
	return &Error{File: file, Msg: fmt.Sprintf("larger than %d KiB, the most a study file may be", MaxFileBytes>>10)}
}

// decodeDocument parses data as exactly one YAML document: a second one
// would otherwise be silently ignored.
func decodeDocument(file string, data []byte) (*yaml.Node, error) {
	if len(data) > MaxFileBytes {
		return nil, tooLarge(file)
	}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		msg := cleanYAMLErr(err)
		line := syntaxLine(data, err)
		if err == io.EOF {
			msg = "the file is empty"
		}
		return nil, &Error{File: file, Line: line, Msg: msg}
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == io.EOF:
		return &root, nil
	case err != nil:
		line := 0
		fmt.Sscanf(err.Error(), "yaml: line %d:", &line)
		return nil, &Error{File: file, Line: line, Msg: "a second YAML document is not allowed (" + cleanYAMLErr(err) + ")"}
	}
	return nil, &Error{File: file, Line: next.Line, Msg: "a second YAML document is not allowed: a study is one document (remove the ---)"}
}

func unwrapPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// Builtin lists the studies embedded in the binary.
func Builtin() []string {
	ents, _ := studies.FS.ReadDir(".")
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Parse decodes and validates a study. Targets and workloads are checked
// against the registries later (Validate), which this package does not
// import, to keep it free of engine code.
func Parse(file string, data []byte) (*Study, error) {
	root, err := decodeDocument(file, data)
	if err != nil {
		return nil, err
	}
	if !looksLikeStudy(root) {
		return nil, &Error{File: file, Msg: "not a study file (line 1 is not YAML of a study)"}
	}
	s := &Study{File: file, Source: string(data), root: root}
	d := decoder{file: file}
	if len(root.Content) > 0 && root.Content[0].Kind == yaml.MappingNode {
		// Targets may be bare names or mappings; decode them by hand.
		if err := d.decodeStudy(root.Content[0], s); err != nil {
			return nil, err
		}
	} else if err := d.decode(root, reflect.ValueOf(s).Elem(), ""); err != nil {
		return nil, err
	}
	if err := s.check(root); err != nil {
		return nil, err
	}
	return s, nil
}

// looksLikeStudy tells whether a document is a mapping with at least one
// field a study has: anything else (a password file, a text, a list) is
// not a study, and its content, which may be anyone's, is not echoed.
func looksLikeStudy(root *yaml.Node) bool {
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return false
	}
	t := reflect.TypeOf(Study{})
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		for j := 0; j < t.NumField(); j++ {
			if tag := strings.Split(t.Field(j).Tag.Get("yaml"), ",")[0]; tag != "" && tag != "-" && tag == m.Content[i].Value {
				return true
			}
		}
		if m.Content[i].Value == "targets" {
			return true
		}
	}
	return false
}

func (d decoder) decodeStudy(m *yaml.Node, s *Study) error {
	// Decode everything but targets generically, then targets one by one.
	var targets *yaml.Node
	rest := &yaml.Node{Kind: yaml.MappingNode, Line: m.Line}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "targets" {
			targets = m.Content[i+1]
			continue
		}
		rest.Content = append(rest.Content, m.Content[i], m.Content[i+1])
	}
	if err := d.decode(rest, reflect.ValueOf(s).Elem(), ""); err != nil {
		return err
	}
	if targets == nil {
		return nil
	}
	items := targets.Content
	if targets.Kind == yaml.ScalarNode {
		items = []*yaml.Node{targets}
	} else if targets.Kind != yaml.SequenceNode {
		return d.errf(targets, "targets", "want a list of target names or mappings, got a %s", kindName(targets))
	}
	for i, it := range items {
		var t Target
		path := fmt.Sprintf("targets[%d]", i)
		if it.Kind == yaml.ScalarNode {
			t.Name = it.Value
			if strings.Contains(it.Value, "://") {
				t.Name, t.URI = "", it.Value
			}
		} else {
			type plain Target // no UnmarshalYAML: decode field by field
			var p plain
			if err := d.decode(it, reflect.ValueOf(&p).Elem(), path); err != nil {
				return err
			}
			t = Target(p)
		}
		t.node = it
		s.Targets = append(s.Targets, t)
	}
	return nil
}

// lineOf finds the line of a top-level field, for errors found after
// decoding.
func lineOf(root *yaml.Node, field string) int {
	if root == nil || len(root.Content) == 0 {
		return 0
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == field {
			return m.Content[i].Line
		}
	}
	return m.Line
}

func (s *Study) check(root *yaml.Node) error {
	fail := func(field, format string, args ...any) error {
		return &Error{File: s.File, Line: lineOf(root, strings.Split(field, "[")[0]), Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if s.Name == "" {
		return fail("name", "missing: every study needs a name")
	}
	if err := checkName(s.Name); err != nil {
		return fail("name", "%v", err)
	}
	// The title heads report.md and report.html: one line of text, and no
	// image, which a browser opening report.html would fetch from wherever
	// the study says (the page works offline, and reaches no one).
	if hasControl(s.Title) {
		return fail("title", "%q: one line of text, no line break or control character (it heads the report)", s.Title)
	}
	if strings.Contains(s.Title, "![") {
		return fail("title", "%q: no Markdown image in a title: report.html would fetch it when opened", s.Title)
	}
	if s.Durability == "" {
		s.Durability = "sync"
	}
	if !durabilityClass(s.Durability) {
		return fail("durability", "%q: want sync (each batch durable on return), async, or default (each engine as it ships)", s.Durability)
	}
	if s.Seed < 0 {
		return fail("seed", "%d: want a whole number from 0", s.Seed)
	}
	if s.SeedStudy != "" && !seedStudyRE.MatchString(s.SeedStudy) {
		return fail("seed_study", "%q: want the seed study's three digits, quoted (\"000\")", s.SeedStudy)
	}
	// Only an absent concurrency takes the default: a 0 written in the
	// file is a mistake, not a request for 8.
	if s.Concurrency == 0 && !s.has("concurrency") {
		s.Concurrency = 8
	}
	if s.Concurrency < 1 || s.Concurrency > 4096 {
		return fail("concurrency", "%d: want 1..4096", s.Concurrency)
	}
	if err := s.checkWorkers(root); err != nil {
		return err
	}
	if len(s.Targets) == 0 {
		return fail("targets", "missing: name at least one target (see `storebench list`)")
	}
	if err := s.checkTargets(); err != nil {
		return err
	}
	if err := s.checkTargetURIs(); err != nil {
		return err
	}
	if err := s.checkTargetForms(); err != nil {
		return err
	}
	if len(s.Workloads) == 0 {
		return fail("workloads", "missing: name at least one workload (see `storebench list`)")
	}
	for i, e := range s.Workloads {
		// As at the top level, a 0 written in the file is a mistake, not
		// a request for the study's concurrency.
		if n := s.entryField(i, "concurrency"); n != nil && (e.Concurrency < 1 || e.Concurrency > 4096) {
			return &Error{File: s.File, Line: n.Line, Field: "workloads." + e.Name + ".concurrency", Msg: fmt.Sprintf("%d: want 1..4096 (absent: the study's concurrency)", e.Concurrency)}
		}
	}
	if err := s.checkConstraints(root); err != nil {
		return err
	}
	if err := s.checkSizing(root); err != nil {
		return err
	}
	if err := s.checkScales(root); err != nil {
		return err
	}
	return s.CheckLadder()
}

// checkName checks a study name: it becomes the name of the results
// directory, so it must stay one safe path element.
func checkName(name string) error {
	if len(name) > MaxNameLen {
		return fmt.Errorf("%d bytes: at most %d letters, digits, '-', '_' or '.' (it names the results directory)", len(name), MaxNameLen)
	}
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%q: want letters, digits, '-', '_' or '.', starting with a letter or digit (it names the results directory)", name)
	}
	return nil
}

// checkTargets refuses a target named twice: both would write the same
// hdr/, logs/ and data directories.
func (s *Study) checkTargets() error {
	seen := map[string]int{}
	for i, t := range s.Targets {
		ref := t.Name
		if ref == "" {
			ref = t.URI
		}
		if j, dup := seen[ref]; dup {
			return s.ErrorAt(fmt.Sprintf("targets[%d]", i), "%s is named twice (also targets[%d]): each target runs once", ref, j)
		}
		seen[ref] = i
	}
	return nil
}

// entryField is the value of field in the file's i-th workload entry, nil
// if the file does not give it.
func (s *Study) entryField(i int, field string) *yaml.Node {
	if s.root == nil || len(s.root.Content) == 0 || s.root.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	w := lineNode(s.root.Content[0], "workloads")
	if w == nil || w.Kind != yaml.SequenceNode || i >= len(w.Content) || w.Content[i].Kind != yaml.MappingNode {
		return nil
	}
	return lineNode(w.Content[i], field)
}

// has reports whether the study file gives a top-level field.
func (s *Study) has(field string) bool {
	if s.root == nil || len(s.root.Content) == 0 || s.root.Content[0].Kind != yaml.MappingNode {
		return false
	}
	m := s.root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == field {
			return true
		}
	}
	return false
}

// NoMachine, given to --machine alone, runs on this machine as it is,
// without the shapes the study (or its scale) names.
const NoMachine = "none"

// CheckLadder validates the ladder (also after a --ladder override).
func (s *Study) CheckLadder() error {
	if len(s.Ladder) == 0 {
		return s.ErrorAt("ladder", "missing: give the data sizes to measure, e.g. [10, 1e3, 1e5]")
	}
	if len(s.Ladder) > MaxLadderSteps {
		return s.ErrorAt("ladder", "%d sizes: at most %d", len(s.Ladder), MaxLadderSteps)
	}
	for i, n := range s.Ladder {
		field := fmt.Sprintf("ladder[%d]", i)
		if n < 1 || n > MaxLadderSize {
			return s.ErrorAt(field, "%s: %s", FormatCount(int64(n)), ladderRange)
		}
		if i > 0 && n <= s.Ladder[i-1] {
			return s.ErrorAt(field, "the ladder must grow strictly")
		}
	}
	return nil
}

// ladderRange says what a ladder size may be, wherever it is given.
const ladderRange = "a data size is a whole number from 1 to 1e9"

// ParseLadder parses a comma-separated ladder (--ladder 10,1e3,1e5).
func ParseLadder(list string) ([]Count, error) {
	var out []Count
	for _, f := range strings.Split(list, ",") {
		c, err := ParseCount(f)
		if err != nil {
			if _, ferr := strconv.ParseFloat(strings.TrimSpace(f), 64); ferr == nil {
				// A number out of range: say the ladder's range, not the
				// one of counts in general.
				return nil, fmt.Errorf("%s is not a data size: want a whole number from 1 to 1e9", strings.TrimSpace(f))
			}
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Largest is the top of the ladder.
func (s *Study) Largest() int64 { return int64(s.Ladder[len(s.Ladder)-1]) }

// checkWorkers checks workers, hosts and ssh; an absent workers is one
// per host (one when no host is named).
func (s *Study) checkWorkers(root *yaml.Node) error {
	fail := func(field string, line int, format string, args ...any) error {
		if line == 0 {
			line = lineOf(root, strings.Split(field, "[")[0])
		}
		return &Error{File: s.File, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if s.Workers == 0 && !s.has("workers") {
		s.Workers = max(len(s.Hosts), 1)
	}
	if s.Workers < 1 || s.Workers > MaxWorkers {
		return fail("workers", 0, "%d: want 1..%d worker processes per target", s.Workers, MaxWorkers)
	}
	if s.ClientCPUs < 0 || s.ClientCPUs > 1024 {
		return fail("client_cpus", 0, "%d: want 1..1024 CPUs for each worker's load, or 0 for every core", s.ClientCPUs)
	}
	hostsNode := s.topNode(root, "hosts")
	if hostsNode != nil && len(s.Hosts) == 0 {
		return fail("hosts", 0, "empty: name local or ssh://[user@]host[:port] hosts, or leave hosts out")
	}
	for i, raw := range s.Hosts {
		line := 0
		if hostsNode != nil && i < len(hostsNode.Content) {
			line = hostsNode.Content[i].Line
		}
		if _, err := ParseHost(raw); err != nil {
			return fail(fmt.Sprintf("hosts[%d]", i), line, "%v", err)
		}
	}
	for i, o := range s.SSH.Options {
		field := fmt.Sprintf("ssh.options[%d]", i)
		k, _, ok := strings.Cut(o, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t") || strings.HasPrefix(k, "-") {
			return fail(field, s.Line(field), "%q: want Key=value, as ssh -o takes it", o)
		}
		if strings.EqualFold(k, "PasswordAuthentication") || strings.EqualFold(k, "BatchMode") {
			return fail(field, s.Line(field), "%q: storebench runs ssh in batch mode, with keys only", o)
		}
		// A study file is data: nothing in it may make ssh run a command
		// (ProxyCommand, LocalCommand, KnownHostsCommand, Match exec),
		// load code (PKCS11Provider), read or write a local file
		// (Include, IdentityFile, UserKnownHostsFile, ControlPath) or
		// reach another address (ProxyJump, HostName, forwardings).
		if msg := checkFileSSHOption(o); msg != "" {
			return fail(field, s.Line(field), "%s", msg)
		}
	}
	if s.SSH.Identity != "" && strings.ContainsAny(s.SSH.Identity, "%$") {
		return fail("ssh.identity", s.Line("ssh.identity"), "%q: ssh expands %% and ${} in an identity path: name the file itself", s.SSH.Identity)
	}
	if msg := checkCacheDir(s.SSH.CacheDir); msg != "" {
		return fail("ssh.cache_dir", s.Line("ssh.cache_dir"), "%s", msg)
	}
	return nil
}

// topNode is the value node of a top-level field of the file, or nil.
func (s *Study) topNode(root *yaml.Node, field string) *yaml.Node {
	if root == nil || len(root.Content) == 0 {
		return nil
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == field {
			return m.Content[i+1]
		}
	}
	return nil
}

// Override holds command-line changes to a study. A nil field was not
// given; a given one is checked even when it is empty or zero, so that
// --targets ” or --concurrency 0 is refused rather than read as "the
// study's own".
type Override struct {
	Ladder      *string
	Targets     *string
	Durability  *string
	Seed        *int64
	Concurrency *int
	TimeLimit   *string
	// Workers, Hosts (comma-separated), SSHIdentity and SSHOptions set the
	// study's workers, hosts and ssh.
	Workers     *int
	ClientCPUs  *int
	Hosts       *string
	SSHIdentity *string
	SSHOptions  []string
	// Scale names one of the study's scales, applied before the other
	// overrides so that the command line still wins.
	Scale string
	// Set holds "workload.param=value" assignments.
	Set []string
	// Machines, when given (--machine, repeatable), replace the study's
	// machines: list; NoMachine alone empties it.
	Machines []string
	// Crash, when set, adds a crash phase of that many trials: the
	// durability workload, each crash kind under the study's durability.
	Crash *int
}

// CrashWorkload is the workload --crash adds (workload/durability).
const CrashWorkload = "durability"

// Apply changes s per o. Errors name the flag; errors found later about a
// field a flag set (by a workload, see Locate) name the flag too.
func (s *Study) Apply(o Override) error {
	// In this order: the scale first, so that the other flags win over
	// it; --set last.
	for _, apply := range []func(Override) error{
		s.applyScaleFlag, s.applyLadderFlag, s.applyTargetsFlag, s.applyRunFlags,
		s.applyPlacementFlags, s.applyMachinesFlag, s.applySSHFlags, s.applyTimeLimitFlag,
		s.applyCrashFlag, s.applySetFlags,
	} {
		if err := apply(o); err != nil {
			return err
		}
	}
	return nil
}

func (s *Study) applyScaleFlag(o Override) error {
	if o.Scale == "" {
		return nil
	}
	return s.ApplyScale(o.Scale)
}

func (s *Study) applyLadderFlag(o Override) error {
	if o.Ladder == nil {
		return nil
	}
	flag := "--ladder " + *o.Ladder
	if strings.TrimSpace(*o.Ladder) == "" {
		return fmt.Errorf("--ladder '': empty: give the data sizes, e.g. 10,1e3,1e5")
	}
	l, err := ParseLadder(*o.Ladder)
	if err != nil {
		return fmt.Errorf("%s: %v", flag, err)
	}
	s.Ladder = l
	s.overrides = append(s.overrides, override{field: "ladder", flag: flag})
	return s.CheckLadder()
}

func (s *Study) applyTargetsFlag(o Override) error {
	if o.Targets == nil {
		return nil
	}
	if err := s.applyTargets(*o.Targets); err != nil {
		if *o.Targets == "" {
			return fmt.Errorf("--targets '': %v", err)
		}
		return fmt.Errorf("--targets %s: %v", Clip(*o.Targets), err)
	}
	return s.checkTargetForms()
}

// applyRunFlags applies --durability, --seed and --concurrency.
func (s *Study) applyRunFlags(o Override) error {
	if o.Durability != nil {
		if !durabilityClass(*o.Durability) {
			return fmt.Errorf("--durability: %q: want sync, async or default (each engine as it ships)", *o.Durability)
		}
		s.Durability = *o.Durability
		s.overrides = append(s.overrides, override{field: "durability", flag: "--durability " + *o.Durability})
	}
	if o.Seed != nil {
		if *o.Seed < 0 {
			return fmt.Errorf("--seed %d: want a whole number from 0", *o.Seed)
		}
		s.Seed = *o.Seed
		s.overrides = append(s.overrides, override{field: "seed", flag: fmt.Sprintf("--seed %d", *o.Seed)})
	}
	if o.Concurrency != nil {
		if *o.Concurrency < 1 || *o.Concurrency > 4096 {
			return fmt.Errorf("--concurrency %d: want 1..4096", *o.Concurrency)
		}
		s.Concurrency = *o.Concurrency
		s.overrides = append(s.overrides, override{field: "concurrency", flag: fmt.Sprintf("--concurrency %d", *o.Concurrency)})
	}
	return nil
}

// applyPlacementFlags applies --hosts, --workers and --client-cpus.
func (s *Study) applyPlacementFlags(o Override) error {
	if o.Hosts != nil {
		s.Hosts = nil
		for _, h := range strings.Split(*o.Hosts, ",") {
			h = strings.TrimSpace(h)
			if _, err := ParseHost(h); err != nil {
				return fmt.Errorf("--hosts: %v", err)
			}
			s.Hosts = append(s.Hosts, h)
		}
		s.overrides = append(s.overrides, override{field: "hosts", flag: "--hosts " + *o.Hosts})
		if o.Workers == nil && !s.has("workers") {
			// One worker per host: --hosts said how many.
			s.Workers = len(s.Hosts)
			s.overrides = append(s.overrides, override{field: "workers", flag: "--hosts " + *o.Hosts})
		}
	}
	if o.Workers != nil {
		if *o.Workers < 1 || *o.Workers > MaxWorkers {
			return fmt.Errorf("--workers %d: want 1..%d", *o.Workers, MaxWorkers)
		}
		s.Workers = *o.Workers
		s.overrides = append(s.overrides, override{field: "workers", flag: fmt.Sprintf("--workers %d", *o.Workers)})
	}
	if o.ClientCPUs != nil {
		if *o.ClientCPUs < 0 || *o.ClientCPUs > 1024 {
			return fmt.Errorf("--client-cpus %d: want 1..1024, or 0 for every core", *o.ClientCPUs)
		}
		s.ClientCPUs = *o.ClientCPUs
		s.overrides = append(s.overrides, override{field: "client_cpus", flag: fmt.Sprintf("--client-cpus %d", *o.ClientCPUs)})
	}
	return nil
}

func (s *Study) applyMachinesFlag(o Override) error {
	if len(o.Machines) == 0 {
		return nil
	}
	for _, m := range o.Machines {
		if strings.TrimSpace(m) == "" {
			return fmt.Errorf("--machine '': empty: give limits, e.g. cpus=0.5,memory=256MiB")
		}
		if m == NoMachine && len(o.Machines) > 1 {
			return fmt.Errorf("--machine %s runs on this machine as it is: it goes alone, not with other shapes", NoMachine)
		}
	}
	s.Machines = append([]string(nil), o.Machines...)
	if o.Machines[0] == NoMachine {
		s.Machines = nil
	}
	s.overrides = append(s.overrides, override{field: "machines", flag: "--machine " + strings.Join(o.Machines, " --machine ")})
	return nil
}

// applySSHFlags applies --ssh-identity and --ssh-option.
func (s *Study) applySSHFlags(o Override) error {
	if o.SSHIdentity != nil {
		if *o.SSHIdentity == "" {
			return fmt.Errorf("--ssh-identity '': name a private key file")
		}
		s.SSH.Identity = *o.SSHIdentity
		// Checked with the study's files (CheckFiles), under the flag's name.
		s.overrides = append(s.overrides, override{field: "ssh.identity", flag: "--ssh-identity " + *o.SSHIdentity})
	}
	// Any option the user types is passed on (ProxyCommand included): the
	// allow-list is for study files, which people share. They go before
	// the file's, so that they win (ssh takes an option's first value).
	var cliOpts []string
	for _, opt := range o.SSHOptions {
		k, _, ok := strings.Cut(opt, "=")
		if !ok || k == "" || strings.HasPrefix(k, "-") {
			return fmt.Errorf("--ssh-option %q: want Key=value, as ssh -o takes it", opt)
		}
		if strings.EqualFold(k, "PasswordAuthentication") || strings.EqualFold(k, "BatchMode") {
			return fmt.Errorf("--ssh-option %q: storebench runs ssh in batch mode, with keys only", opt)
		}
		cliOpts = append(cliOpts, opt)
	}
	if len(cliOpts) > 0 {
		s.SSH.Options = append(cliOpts, s.SSH.Options...)
	}
	return nil
}

func (s *Study) applyTimeLimitFlag(o Override) error {
	if o.TimeLimit == nil {
		return nil
	}
	// "none" runs without the study's limit; 0 would stop the run
	// before it began, so it is no way to say that.
	var d Duration
	if strings.TrimSpace(*o.TimeLimit) != "none" {
		v, err := ParseDuration(*o.TimeLimit)
		if err != nil {
			return fmt.Errorf("--time-limit: %v", err)
		}
		if v <= 0 {
			return fmt.Errorf("--time-limit %s: want a positive duration (e.g. 30m), or none to run without the study's limit", *o.TimeLimit)
		}
		d = Duration(v)
	}
	s.Limits.Time = d
	s.overrides = append(s.overrides, override{field: "limits.time", flag: "--time-limit " + *o.TimeLimit})
	return nil
}

func (s *Study) applyCrashFlag(o Override) error {
	if o.Crash == nil {
		return nil
	}
	return s.addCrash(*o.Crash)
}

func (s *Study) applySetFlags(o Override) error {
	for _, a := range o.Set {
		if err := s.set(a); err != nil {
			return fmt.Errorf("--set %s: %v", a, err)
		}
	}
	return nil
}

// addCrash adds the crash phase (--crash K): K power failures and K
// kill -9 of every target under the study's own durability, every
// acknowledged write read back after each (workload durability).
func (s *Study) addCrash(k int) error {
	flag := fmt.Sprintf("--crash %d", k)
	if k < 1 || k > 10000 {
		return fmt.Errorf("%s: want 1..10000 crashes of each kind", flag)
	}
	if s.Durability == "default" {
		// The crash phase checks what a class promises; each engine's
		// own default is a class per target, not one to check.
		return fmt.Errorf("%s: durability is default (each engine as it ships): name the class to crash under with --durability sync or async", flag)
	}
	for _, e := range s.Workloads {
		if e.Name == CrashWorkload {
			return fmt.Errorf("%s: the study has a %s workload already (set its trials with --set %s.trials=%d)", flag, CrashWorkload, CrashWorkload, k)
		}
	}
	var params yaml.Node
	if err := yaml.Unmarshal([]byte(fmt.Sprintf("trials: %d\nclasses: [%s]\n", k, s.Durability)), &params); err != nil {
		return err
	}
	p := params.Content[0]
	clearLines(p)
	s.Workloads = append(s.Workloads, Entry{Name: CrashWorkload, Params: *p})
	s.overrides = append(s.overrides, override{field: "workloads." + CrashWorkload, flag: flag})
	return nil
}

// durabilityClass reports whether d is a study's durability: sync, async,
// or default (each engine's own, resolved per target by the coordinator).
func durabilityClass(d string) bool { return d == "sync" || d == "async" || d == "default" }

// applyTargets replaces the targets by a comma-separated list; a target
// the study file has keeps its options.
func (s *Study) applyTargets(list string) error {
	if strings.TrimSpace(list) == "" {
		return fmt.Errorf("empty: name at least one target (see `storebench list`)")
	}
	keep := map[string]Target{}
	for _, t := range s.Targets {
		ref := t.Name
		if ref == "" {
			ref = t.URI
		}
		keep[ref] = t
	}
	var targets []Target
	seen := map[string]bool{}
	flag := "--targets " + list
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			return fmt.Errorf("an empty name between commas")
		}
		if seen[name] {
			return fmt.Errorf("%s is named twice: each target runs once", name)
		}
		seen[name] = true
		t, ok := keep[name]
		if !ok {
			t = Target{Name: name}
			if strings.Contains(name, "://") {
				t = Target{URI: name}
			}
			s.overrides = append(s.overrides, override{field: fmt.Sprintf("targets[%d]", len(targets)), flag: flag})
		}
		targets = append(targets, t)
	}
	s.Targets = targets
	return nil
}

// set applies "workload.param.sub=value" to the raw params of a workload,
// so the workload's own strict decoding validates it like file content;
// "workload.sweep.sub=value" goes to the workload's sweep the same way.
func (s *Study) set(assign string) error {
	key, val, ok := strings.Cut(assign, "=")
	if !ok {
		return fmt.Errorf("want workload.param=value")
	}
	parts := strings.Split(key, ".")
	if len(parts) < 2 {
		return fmt.Errorf("want workload.param=value")
	}
	var v yaml.Node
	if err := yaml.Unmarshal([]byte(val), &v); err != nil || len(v.Content) == 0 {
		v = yaml.Node{Kind: yaml.ScalarNode, Value: val}
	} else {
		v = *v.Content[0]
	}
	// The value comes from the command line, not from a line of the file:
	// errors must not point into the file, but name the flag.
	clearLines(&v)
	if len(parts) == 2 && parts[1] == "concurrency" {
		if err := s.setEntryConcurrency(parts[0], val); err != nil {
			return err
		}
		s.overrides = append(s.overrides, override{field: "workloads." + parts[0] + ".concurrency", flag: "--set " + assign})
		return nil
	}
	if err := s.setParam(parts, &v); err != nil {
		return err
	}
	s.overrides = append(s.overrides, override{field: paramPath(parts), flag: "--set " + assign})
	return nil
}

// setEntryConcurrency sets workload's own concurrency (WORKLOAD.concurrency).
func (s *Study) setEntryConcurrency(workload, val string) error {
	c, err := strconv.Atoi(strings.TrimSpace(val))
	if err != nil || c < 1 || c > 4096 {
		return fmt.Errorf("%q: want a whole number 1..4096", val)
	}
	for i := range s.Workloads {
		if s.Workloads[i].Name == workload {
			s.Workloads[i].Concurrency = c
			return nil
		}
	}
	return fmt.Errorf("the study has no workload %q", workload)
}

// paramPath is the study path of workload.param.sub (workload.sweep.sub:
// the workload's sweep).
func paramPath(parts []string) string {
	if len(parts) >= 3 && parts[1] == "sweep" {
		return "workloads." + parts[0] + ".sweep." + strings.Join(parts[2:], ".")
	}
	return "workloads." + parts[0] + ".params." + strings.Join(parts[1:], ".")
}

// setParam puts v at workload.param.sub (parts) in the raw params.
func (s *Study) setParam(parts []string, v *yaml.Node) error {
	for i := range s.Workloads {
		w := &s.Workloads[i]
		if w.Name != parts[0] {
			continue
		}
		root, path := &w.Params, parts[1:]
		if len(parts) >= 3 && parts[1] == "sweep" {
			root, path = &w.Sweep, parts[2:]
		}
		if root.Kind == 0 {
			*root = yaml.Node{Kind: yaml.MappingNode}
		}
		n := root
		for j, p := range path {
			if n.Kind != yaml.MappingNode {
				return fmt.Errorf("%s is not a mapping", strings.Join(parts[:j+1], "."))
			}
			var next *yaml.Node
			for k := 0; k+1 < len(n.Content); k += 2 {
				if n.Content[k].Value == p {
					next = n.Content[k+1]
				}
			}
			last := j == len(path)-1
			if next == nil {
				next = &yaml.Node{Kind: yaml.MappingNode}
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: p}, next)
			}
			if last {
				*next = *v
			}
			n = next
		}
		return nil
	}
	return fmt.Errorf("the study has no workload %q", parts[0])
}

func clearLines(n *yaml.Node) {
	n.Line, n.Column = 0, 0
	for _, c := range n.Content {
		clearLines(c)
	}
}

// Abs returns an absolute form of a user-given path for messages.
func Abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
