package study

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Effective writes the study as it runs — the chosen scale and the
// command line's overrides applied — as one YAML document that Load reads
// back to the same study. Scales are left out (the chosen one is applied
// already). redact, if not nil, rewrites every target URI, so that no
// password reaches the file.
func (s *Study) Effective(redact func(string) string) ([]byte, error) {
	m := &yaml.Node{Kind: yaml.MappingNode}
	add := func(key string, v *yaml.Node) {
		m.Content = append(m.Content, scalar(key), v)
	}
	s.effectiveRun(add)
	sn, cliOnly := s.sshNode()
	if sn != nil {
		add("ssh", sn)
	}
	ladder := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, n := range s.Ladder {
		ladder.Content = append(ladder.Content, scalar(FormatCount(int64(n))))
	}
	add("ladder", ladder)
	if limits := s.limitsNode(); len(limits.Content) > 0 {
		add("limits", limits)
	}
	targets, err := s.targetsNode(redact)
	if err != nil {
		return nil, err
	}
	add("targets", targets)
	add("workloads", s.workloadsNode())
	// Constraints and sizing cannot be overridden: the file's own text, as
	// written.
	if s.root != nil && len(s.root.Content) > 0 {
		if c := lineNode(s.root.Content[0], "constraints"); c != nil {
			add("constraints", plain(c))
		}
		if z := lineNode(s.root.Content[0], "sizing"); z != nil {
			add("sizing", plain(z))
		}
	}
	head := fmt.Sprintf("The study as run: %s with the chosen scale and the command line's overrides\napplied. The text as given is in study.original.yaml.", s.File)
	if len(cliOnly) > 0 {
		head += fmt.Sprintf("\nNot written here: the ssh options %s, given with --ssh-option; a study file\nmay not carry them: give them again with --ssh-option (see results.json's command).", strings.Join(cliOnly, ", "))
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{m}, HeadComment: head}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("writing the study as run: %w", err)
	}
	return out, nil
}

// effectiveRun adds the study's top fields, name to machines.
func (s *Study) effectiveRun(add func(key string, v *yaml.Node)) {
	add("name", scalar(s.Name))
	if s.Title != "" {
		add("title", scalar(s.Title))
	}
	if s.Description != "" {
		add("description", scalar(s.Description))
	}
	add("seed", scalar(strconv.FormatInt(s.Seed, 10)))
	if s.SeedStudy != "" {
		ss := scalar(s.SeedStudy)
		ss.Style = yaml.DoubleQuotedStyle
		add("seed_study", ss)
	}
	add("durability", scalar(s.Durability))
	add("concurrency", scalar(strconv.Itoa(s.Concurrency)))
	if s.ClientCPUs > 0 {
		add("client_cpus", scalar(strconv.Itoa(s.ClientCPUs)))
	}
	if s.Workers > 1 || len(s.Hosts) > 0 {
		add("workers", scalar(strconv.Itoa(s.Workers)))
	}
	if len(s.Hosts) > 0 {
		hosts := &yaml.Node{Kind: yaml.SequenceNode}
		for _, h := range s.Hosts {
			hosts.Content = append(hosts.Content, scalar(h))
		}
		add("hosts", hosts)
	}
	if len(s.Machines) > 0 {
		ms := &yaml.Node{Kind: yaml.SequenceNode}
		for _, m := range s.Machines {
			n := scalar(m)
			n.Style = yaml.DoubleQuotedStyle
			ms.Content = append(ms.Content, n)
		}
		add("machines", ms)
	}
}

// sshNode is the study's ssh section (nil: nothing to write). An ssh
// option the command line gave that a study file may not carry
// (ProxyCommand=…) is left out: written here it would be refused when
// the study is run again, or run a command for whoever runs it. Their
// keys are cliOnly, for the comment that says to give them again.
func (s *Study) sshNode() (sn *yaml.Node, cliOnly []string) {
	var sshOpts []string
	for _, o := range s.SSH.Options {
		if FileSafeSSHOption(o) {
			sshOpts = append(sshOpts, o)
		} else {
			k, _, _ := strings.Cut(o, "=")
			cliOnly = append(cliOnly, k)
		}
	}
	if s.SSH.Identity == "" && len(sshOpts) == 0 && s.SSH.CacheDir == "" {
		return nil, cliOnly
	}
	sn = &yaml.Node{Kind: yaml.MappingNode}
	if s.SSH.Identity != "" {
		sn.Content = append(sn.Content, scalar("identity"), scalar(s.SSH.Identity))
	}
	if s.SSH.CacheDir != "" {
		sn.Content = append(sn.Content, scalar("cache_dir"), scalar(s.SSH.CacheDir))
	}
	if len(sshOpts) > 0 {
		opts := &yaml.Node{Kind: yaml.SequenceNode}
		for _, o := range sshOpts {
			opts.Content = append(opts.Content, scalar(o))
		}
		sn.Content = append(sn.Content, scalar("options"), opts)
	}
	return sn, cliOnly
}

// limitsNode is the study's limits, those set.
func (s *Study) limitsNode() *yaml.Node {
	limits := &yaml.Node{Kind: yaml.MappingNode}
	for _, l := range []struct {
		key string
		set bool
		val string
	}{
		{"time", s.Limits.Time > 0, time.Duration(s.Limits.Time).String()},
		{"target_time", s.Limits.TargetTime > 0, time.Duration(s.Limits.TargetTime).String()},
		{"disk", s.Limits.Disk > 0, formatBytes(s.Limits.Disk)},
	} {
		if l.set {
			limits.Content = append(limits.Content, scalar(l.key), scalar(l.val))
		}
	}
	return limits
}

// targetsNode is the study's targets, their URIs through redact.
func (s *Study) targetsNode(redact func(string) string) (*yaml.Node, error) {
	targets := &yaml.Node{Kind: yaml.SequenceNode}
	for _, t := range s.Targets {
		tn := &yaml.Node{Kind: yaml.MappingNode}
		if t.URI != "" {
			// The name of a target given by URI is derived from it (and
			// numbered) when the study is prepared: write the URI alone.
			uri := t.URI
			if redact != nil {
				uri = redact(uri)
			}
			tn.Content = append(tn.Content, scalar("uri"), scalar(uri))
		} else {
			tn.Content = append(tn.Content, scalar("name"), scalar(t.Name))
		}
		if t.Cache > 0 {
			tn.Content = append(tn.Content, scalar("cache"), scalar(formatBytes(t.Cache)))
		}
		if len(t.Options) > 0 {
			opts := &yaml.Node{}
			if err := opts.Encode(t.Options); err != nil {
				return nil, fmt.Errorf("target %s options: %w", t.Name, err)
			}
			tn.Content = append(tn.Content, scalar("options"), opts)
		}
		targets.Content = append(targets.Content, tn)
	}
	return targets, nil
}

// workloadsNode is the study's workloads.
func (s *Study) workloadsNode() *yaml.Node {
	workloads := &yaml.Node{Kind: yaml.SequenceNode}
	for _, w := range s.Workloads {
		wn := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{scalar("name"), scalar(w.Name)}}
		if w.Concurrency > 0 {
			wn.Content = append(wn.Content, scalar("concurrency"), scalar(strconv.Itoa(w.Concurrency)))
		}
		if w.Params.Kind != 0 {
			wn.Content = append(wn.Content, scalar("params"), plain(&w.Params))
		}
		if w.Sweep.Kind != 0 {
			wn.Content = append(wn.Content, scalar("sweep"), plain(&w.Sweep))
		}
		workloads.Content = append(workloads.Content, wn)
	}
	return workloads
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

// lineNode is the value of a top-level key of mapping m, nil if absent.
func lineNode(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// plain copies a node tree with its aliases resolved and its anchors
// dropped: the anchors may live in parts of the file not written.
func plain(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	c := *n
	c.Anchor = ""
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, ch := range n.Content {
		c.Content[i] = plain(ch)
	}
	return &c
}

// formatBytes writes a size the way ParseBytes reads it, in binary units
// when exact.
func formatBytes(b Bytes) string {
	for _, u := range []struct {
		suf string
		m   Bytes
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b >= u.m && b%u.m == 0 {
			return strconv.FormatInt(int64(b/u.m), 10) + u.suf
		}
	}
	return strconv.FormatInt(int64(b), 10)
}
