package study

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// A study file is data that people share: it never executes anything,
// never reads a local file other than one it names for what it is (an
// ssh key), and never reaches a host other than its targets and hosts.
// What could do otherwise is refused when the file is read (exit 2,
// naming the field); the command line, which the user types, may still
// give it. See docs/design.md, "A study file is data".

// fileSSHOptions are the ssh -o options a study file may carry: each
// only tunes the connection to the host the study names. None runs a
// command, loads code, reads or writes a local file, forwards anything or
// reaches another address. A nil list of values allows any value made of
// plain characters (sshValueRE); otherwise the value must be one listed.
var fileSSHOptions = []sshOption{
	{"AddressFamily", nil},
	{"CASignatureAlgorithms", nil},
	{"Ciphers", nil},
	{"Compression", nil},
	{"ConnectTimeout", nil},
	{"ConnectionAttempts", nil},
	{"HostKeyAlgorithms", nil},
	{"IPQoS", nil},
	{"IdentitiesOnly", nil},
	{"KexAlgorithms", nil},
	{"MACs", nil},
	{"PubkeyAcceptedAlgorithms", nil},
	{"PubkeyAcceptedKeyTypes", nil},
	{"RekeyLimit", nil},
	{"ServerAliveCountMax", nil},
	{"ServerAliveInterval", nil},
	// The strictest setting only: no, off and accept-new trust or record
	// a host key on the file's word, which is the user's decision.
	{"StrictHostKeyChecking", []string{"yes"}},
	{"TCPKeepAlive", nil},
}

type sshOption struct {
	name   string
	values []string
}

// sshValueRE is what an allowed option's value may hold: algorithm lists
// ("+ssh-rsa,aes256-gcm@openssh.com"), numbers, yes/no. No blank, quote,
// '%' or '$' (ssh expands those in some options), nothing ssh would read
// as a second argument.
var sshValueRE = regexp.MustCompile(`^[A-Za-z0-9@.,+^_:-]+$`)

// FileSSHOptionNames lists the ssh options a study file may carry, for
// messages and docs.
func FileSSHOptionNames() []string {
	var out []string
	for _, o := range fileSSHOptions {
		n := o.name
		if o.values != nil {
			n += "=" + strings.Join(o.values, "|")
		}
		out = append(out, n)
	}
	return out
}

// checkFileSSHOption says why a study file may not carry ssh option opt
// ("" when it may).
func checkFileSSHOption(opt string) string {
	k, v, _ := strings.Cut(opt, "=")
	i := slices.IndexFunc(fileSSHOptions, func(o sshOption) bool { return strings.EqualFold(o.name, k) })
	if i < 0 {
		return fmt.Sprintf("%q: a study file may carry only ssh options that tune the connection (%s): "+
			"others can run a command, read a local file or reach another host; give it on the command line with --ssh-option if you mean it",
			opt, strings.Join(FileSSHOptionNames(), ", "))
	}
	if !sshValueRE.MatchString(v) {
		return fmt.Sprintf("%q: the value may hold only letters, digits and @.,+^_:- (give it on the command line with --ssh-option if you mean it)", opt)
	}
	if vals := fileSSHOptions[i].values; vals != nil && !slices.ContainsFunc(vals, func(w string) bool { return strings.EqualFold(v, w) }) {
		return fmt.Sprintf("%q: a study file may only ask for %s=%s: a laxer host-key check is the user's decision (--ssh-option)", opt, fileSSHOptions[i].name, strings.Join(vals, "|"))
	}
	return ""
}

// FileSafeSSHOption reports whether a study file may carry ssh option
// opt: what the command line gave beyond that is not written into a
// results directory's study.yaml (see Effective).
func FileSafeSSHOption(opt string) bool { return checkFileSSHOption(opt) == "" }

// MaxKeyFileBytes bounds an ssh identity file: a key is a few KiB.
const MaxKeyFileBytes = 64 << 10

// keyFileRE is the first line of what ssh -i reads: a private key as
// ssh-keygen writes it (PEM or OpenSSH format), or a public key or
// certificate whose private half is in the agent.
var keyFileRE = regexp.MustCompile(`^(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----|(ssh-|ecdsa-|sk-)[A-Za-z0-9@.-]+ AAAA)`)

// CheckFiles checks the local files the study names, before anything
// starts: ssh.identity (--ssh-identity) must be a readable regular file
// holding an ssh key, so that a missing key fails here, in one line,
// rather than as an ssh failure per host, and so that a study cannot
// point ssh at an arbitrary file (a FIFO, /dev/zero, a secret that is
// not a key). Errors name the file's line, or the flag that gave it.
func (s *Study) CheckFiles() error {
	if s.SSH.Identity == "" {
		return nil
	}
	if msg := checkKeyFile(s.SSH.Identity); msg != "" {
		return s.ErrorAt("ssh.identity", "%s", msg)
	}
	return nil
}

// checkKeyFile says what is wrong with path as an ssh key file ("" when
// nothing is). A leading ~/ is the home directory, as ssh reads it.
func checkKeyFile(path string) string {
	if strings.ContainsAny(path, "%$") {
		return "ssh expands % and ${} in an identity path: name the file itself"
	}
	if strings.HasPrefix(path, "-") {
		return "a key file may not start with '-'"
	}
	p := path
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
	}
	st, err := os.Stat(p)
	if err != nil {
		return fmt.Sprintf("cannot read the key file: %v", unwrapPathErr(err))
	}
	if !st.Mode().IsRegular() {
		return "not a regular file: name an ssh key file"
	}
	if st.Size() > MaxKeyFileBytes {
		return fmt.Sprintf("%d bytes, larger than any ssh key file (at most %d KiB)", st.Size(), MaxKeyFileBytes>>10)
	}
	f, err := os.Open(p)
	if err != nil {
		return fmt.Sprintf("cannot read the key file: %v", unwrapPathErr(err))
	}
	defer f.Close()
	head := make([]byte, 256)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return fmt.Sprintf("cannot read the key file: %v", unwrapPathErr(err))
	}
	if !keyFileRE.Match(head[:n]) {
		return "not an ssh key file (want a private key as ssh-keygen writes it, -----BEGIN … PRIVATE KEY-----, or the public key of one in ssh-agent)"
	}
	return ""
}

// checkCacheDir checks ssh.cache_dir, a directory on the remote hosts:
// storebench writes only under <cache_dir>/<version-digest>/ and
// <cache_dir>/data/<run>/ there, through quoted shell words; a leading
// '-' would still be read as an option by mkdir and mv, and a control
// character has no place in a path.
func checkCacheDir(dir string) string {
	if strings.HasPrefix(dir, "-") {
		return fmt.Sprintf("%q: may not start with '-'", dir)
	}
	if hasControl(dir) {
		return fmt.Sprintf("%q: a control character in a path", dir)
	}
	return ""
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// SetOnCommandLine reports whether the command line (--set) gave field, a
// study path such as "workloads.tripcache.params.kafka_uri", and has the
// last word on it: a value that only the user may give (an address the
// study's targets and hosts do not name) is checked with it.
func (s *Study) SetOnCommandLine(field string) bool {
	for i := len(s.overrides) - 1; i >= 0; i-- {
		o := s.overrides[i]
		if _, in := under(field, o.field); in {
			return o.flag != ""
		}
	}
	return false
}

// uriLocalParam says why a target URI's query parameter may not come from
// a study file ("" when it may): the drivers read local files named there
// (pgx: passfile, sslkey, sslcert, sslrootcert, service and servicefile,
// which can also name another host; the MongoDB driver: tlsCAFile,
// tlsCertificateKeyFile, ...). The command line (--targets) may give them.
func uriLocalParam(key string) string {
	k := strings.ToLower(key)
	switch {
	case strings.Contains(k, "file"), k == "sslkey", k == "sslcert", k == "sslrootcert", k == "sslcrl", k == "sslcrldir", k == "service":
		return fmt.Sprintf("query parameter %q makes the client read a local file (or take its server from one): a study file may not (remove it there); give this target on the command line with --targets", key)
	}
	return ""
}

// checkTargetForms refuses, before anything starts, a target URI whose
// form its driver would only refuse when it opens (or, worse, after it
// connected): a redis:// database that is not a number 0 or more
// (redis://host/-1).
func (s *Study) checkTargetForms() error {
	for i, t := range s.Targets {
		u, err := url.Parse(t.URI)
		if t.URI == "" || err != nil || u.Scheme != "redis" {
			continue
		}
		db := strings.TrimPrefix(u.Path, "/")
		if db == "" {
			continue
		}
		if n, err := strconv.Atoi(db); err != nil || n < 0 || strconv.Itoa(n) != db {
			return s.ErrorAt(fmt.Sprintf("targets[%d]", i), "redis database %q: want a number 0 or more (redis://host:port/N)", Clip(db))
		}
	}
	return nil
}

// checkTargetURIs refuses a study file's target URI whose query names a
// local file for the client to read.
func (s *Study) checkTargetURIs() error {
	for i, t := range s.Targets {
		if t.URI == "" {
			continue
		}
		u, err := url.Parse(t.URI)
		if err != nil {
			continue // the target says what is wrong with it when it opens
		}
		keys := make([]string, 0, len(u.Query()))
		for k := range u.Query() {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if msg := uriLocalParam(k); msg != "" {
				return s.ErrorAt(fmt.Sprintf("targets[%d]", i), "%s", msg)
			}
		}
	}
	return nil
}
