// Package redact masks the secrets of connection strings wherever
// storebench prints or stores one: on the screen, in an error, in a log,
// in results.json, in the reports and in the study text kept with a run.
// It is the one place that knows what a secret looks like; it imports
// nothing of storebench, so every layer (the CLI, the coordinator, the
// workloads, the targets, the servers, the study and the results) can use
// it.
//
// What is masked, with xxxxx, in any text:
//
//   - the password of every URI, whatever its scheme (redis, rediss,
//     redis-cluster, postgres, postgresql, mysql, cassandra, mongodb,
//     mongodb+srv, memcached, aerospike, http, https, kafka, ssh, ...):
//     scheme://user:PASSWORD@host;
//   - the whole user information of a URI without a password whose
//     scheme takes a lone user information for a password (see
//     loneSecret: redis, rediss, redis-cluster, memcached):
//     redis://PASSWORD@host, an old Redis habit (Redis had no users
//     before 6, and many clients read it so);
//   - the value of every query parameter of a URI whose name says it is a
//     secret (see SecretKey): ?password=, pass=, pwd=, sslpassword=,
//     auth=, token=, secret=, apikey=, tlsCertificateKeyFilePassword=,
//     authMechanismProperties= (it can carry a session token), ...;
//   - the password of a Go MySQL DSN: user:PASSWORD@tcp(host:port)/db
//     (also @unix(, @tcp4(, @tcp6();
//   - the value of a bare key=value pair, as in a PostgreSQL conninfo
//     (password=PW or password='P W'), whose key is the name of a
//     password, a secret or a token (see bareSecret: narrower than
//     SecretKey, since plain text holds key=value pairs that are no
//     secrets, such as --set ycsb.keys=1000);
//   - the arguments Redis echoes back in its "unknown command" errors
//     when the command is AUTH, or follow AUTH in a HELLO: "ERR unknown
//     command 'AUTH', with args beginning with: 'PASSWORD'".
//
// Secrets are masked where the structure says they are (a URI's user
// information and query, a DSN, a key=value pair, a Redis reply), never
// by replacing the text of a password wherever it occurs: a password
// "connect" would turn "failed to connect ... connection refused" into
// "failed to xxxxx ... xxxxxion refused", mangling the message and
// telling the password to whoever reads it. Scrub's last resort, for
// drivers that quote a password bare, is bounded for that reason (see
// Scrub).
//
// A secret is masked whole even when it holds characters that end other
// parts of a URI ('@', '?', '#', ',', '/' in a query value); a URI ends
// at white space or a quote, and its trailing punctuation (",.:;]})>":
// YAML flow punctuation, the colon after a URI in a message, a closing
// parenthesis) is left to the text around it.
package redact

import (
	"io"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Mask replaces a secret.
const Mask = "xxxxx"

// SecretKey reports whether a URI query parameter named k carries a
// secret. It is generous: any name holding pass, pwd, secret, token,
// credential, private, auth or key, except names known to hold no secret:
// authSource and authMechanism (MongoDB: a database name and a mechanism
// name), keyspace, and the names of key files (sslkey, anything ending in
// file or path, such as tlsCertificateKeyFile): a path to a key is not
// the key, and the report is clearer with it. A file's password
// (sslpassword, tlsCertificateKeyFilePassword) is masked.
func SecretKey(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"pass", "pwd", "secret", "token", "credential", "private"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	if strings.Contains(k, "auth") && k != "authsource" && k != "authmechanism" {
		return true
	}
	if strings.Contains(k, "key") && k != "sslkey" && k != "keyspace" &&
		!strings.HasSuffix(k, "file") && !strings.HasSuffix(k, "path") {
		return true
	}
	return false
}

// bareSecret reports whether a key=value pair outside a URI is a secret:
// its key (the part after the last '.') is one of a few names of a
// password, a secret or a token. Outside a URI only whole names count:
// plain text holds key=value pairs that are no secret (--set
// ycsb.keys=1000, a base64 histogram's padding).
func bareSecret(k string) bool {
	k = strings.ToLower(k)
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		k = k[i+1:]
	}
	switch k {
	case "password", "passwd", "pass", "pwd", "sslpassword", "sasl_password", "secret", "client_secret",
		"secret_key", "token", "access_token", "auth_token", "apikey", "api_key":
		return true
	}
	return false
}

// loneSecret reports whether scheme (lower case) is one whose lone user
// information, without a ':', is a password: a target declares its
// schemes so (AddLoneSecretSchemes, from target.Info.LoneUserSecret).
// go-redis and the redis-cluster target read it as a user name, but
// redis://PASSWORD@host is an old Redis habit (Redis had no users before
// 6, and redis-py before 4, among others, read it as the password), and
// the memcached target refuses any credentials (its text protocol has no
// authentication), so whatever stands there was meant as one. A user
// name alone is worth less than a password shown by mistake.
func loneSecret(scheme string) bool {
	loneMu.RLock()
	defer loneMu.RUnlock()
	return loneSchemes[scheme]
}

var (
	loneMu      sync.RWMutex
	loneSchemes = map[string]bool{}
)

// AddLoneSecretSchemes declares URI schemes whose lone user information
// (scheme://SECRET@host) is masked whole, as a password: called when a
// target registers (target.Info.LoneUserSecret).
func AddLoneSecretSchemes(schemes ...string) {
	loneMu.Lock()
	defer loneMu.Unlock()
	for _, sc := range schemes {
		loneSchemes[strings.ToLower(sc)] = true
	}
}

// schemeBefore returns, in lower case, the scheme that ends at k in s
// (s[k:] starts with "://").
func schemeBefore(s string, k int) string {
	i := k
	for i > 0 {
		c := s[i-1]
		if c == '+' || c == '-' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
			i--
			continue
		}
		break
	}
	return strings.ToLower(s[i:k])
}

// Text masks every secret in s (a URI, a command line, a study's YAML, a
// driver's message) with xxxxx.
func Text(s string) string { return mask(s, "") }

// mask masks the secrets of s; a query value also ends at any byte of
// valueEnds.
func mask(s, valueEnds string) string {
	spans := secretSpans(s, valueEnds)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp[0]])
		b.WriteString(Mask)
		last = sp[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// Args returns a copy of a command line with every secret masked: what a
// run stores as its command. A comma separates the targets of --targets,
// so a query value ends at a comma there (the targets after it stay
// readable); a password in the user information is masked whole, commas
// and all.
func Args(args []string) []string {
	if args == nil {
		return nil
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = mask(a, ",")
	}
	return out
}

// Secrets returns the secrets of uri (its password, the values of its
// secret query parameters), each as written and percent-decoded.
func Secrets(uri string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(v string) {
		if v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	for _, sp := range secretSpans(uri, "") {
		raw := uri[sp[0]:sp[1]]
		add(raw)
		if dec, err := url.PathUnescape(raw); err == nil {
			add(dec)
		}
		if dec, err := url.QueryUnescape(raw); err == nil {
			add(dec)
		}
	}
	// The longest first, so that a secret holding another is masked whole.
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// MinBareSecret is the length, in characters, from which Scrub masks a
// secret of the URI wherever its text occurs in a message.
const MinBareSecret = 8

// Scrub masks the secrets of msg (see Text: every URI, DSN, key=value
// pair and Redis reply in it, by its structure) and, as a last resort
// for a driver that quotes a password bare, every occurrence of a secret
// of uri (as written or percent-decoded) that cannot be mistaken for
// other text: one of at least MinBareSecret characters, not all letters
// (a word such as "connection" or "postgres" may be the password), and
// not shown by Text(uri) as another part of the URI (its user, its host).
// A shorter or word-like secret is left where it is not a secret by
// structure: replacing it everywhere ("connect" in "connection refused")
// mangles the message and tells the password by where the mask falls.
// Managed servers' passwords are 32 hex digits, and so always masked.
func Scrub(uri, msg string) string {
	msg = Text(msg)
	shown := Text(uri)
	for _, sec := range Secrets(uri) {
		if bareMaskable(sec) && !strings.Contains(shown, sec) {
			msg = strings.ReplaceAll(msg, sec, Mask)
		}
	}
	return msg
}

// bareMaskable reports whether sec is long enough, and unlike enough a
// word, to be masked wherever its text occurs (see Scrub).
func bareMaskable(sec string) bool {
	if utf8.RuneCountInString(sec) < MinBareSecret {
		return false
	}
	for _, r := range sec {
		if !unicode.IsLetter(r) {
			return true
		}
	}
	return false
}

// Value masks, in place, every string reachable from v (a pointer to a
// struct such as a run's results): every exported string field, and the
// strings in slices, arrays and maps, at any depth. Map keys are left as
// they are.
func Value(v any) { walk(reflect.ValueOf(v)) }

func walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walk(v.Elem())
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			if t.Field(i).IsExported() && holdsStrings(t.Field(i).Type) {
				walk(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		if holdsStrings(v.Type().Elem()) {
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i))
			}
		}
	case reflect.Map:
		if v.IsNil() || !holdsStrings(v.Type().Elem()) {
			return
		}
		iter := v.MapRange()
		for iter.Next() {
			// A map's values cannot be set in place: mask a copy and
			// store it back when it changed.
			val := iter.Value()
			cp := reflect.New(val.Type()).Elem()
			cp.Set(val)
			walk(cp)
			if !reflect.DeepEqual(cp.Interface(), val.Interface()) {
				v.SetMapIndex(iter.Key(), cp)
			}
		}
	case reflect.String:
		if v.CanSet() {
			if r := Text(v.String()); r != v.String() {
				v.SetString(r)
			}
		}
	}
}

// stringTypes caches holdsStrings.
var stringTypes sync.Map // reflect.Type → bool

// holdsStrings reports whether a value of type t can hold a string that
// Value would mask (so that slices of numbers are not walked).
func holdsStrings(t reflect.Type) bool {
	if b, ok := stringTypes.Load(t); ok {
		return b.(bool)
	}
	b := holds(t, map[reflect.Type]bool{})
	stringTypes.Store(t, b)
	return b
}

func holds(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false // a cycle: the other fields decide
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.String, reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return holds(t.Elem(), seen)
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).IsExported() && holds(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// ends are the bytes that end a URI or a bare value: white space and
// quotes.
const ends = " \t\r\n\"'`"

// trailing is the punctuation that ends a sentence or a list around a
// URI rather than its last query value.
const trailing = ",.:;]})>"

// tokenEnd returns where the token starting at i ends (at white space, a
// quote or the end of s), less its trailing punctuation: YAML flow
// punctuation, the colon after it in a message, a closing parenthesis.
func tokenEnd(s string, i int) int {
	end := i
	for end < len(s) && !strings.ContainsRune(ends, rune(s[end])) {
		end++
	}
	for end > i && strings.ContainsRune(trailing, rune(s[end-1])) {
		end--
	}
	return end
}

// secretSpans returns the sorted, disjoint [start, end) byte ranges of the
// secrets in s; a query value also ends at any byte of valueEnds.
func secretSpans(s, valueEnds string) [][2]int {
	var spans [][2]int
	add := func(a, b int) {
		if b > a {
			spans = append(spans, [2]int{a, b})
		}
	}
	uriSpans(s, valueEnds, add)
	dsnSpans(s, add)
	bareSpans(s, valueEnds, add)
	redisArgSpans(s, add)
	if len(spans) == 0 {
		return nil
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		if sp[0] <= last[1] {
			last[1] = max(last[1], sp[1])
			continue
		}
		out = append(out, sp)
	}
	return out
}

// uriSpans finds the secrets of every scheme://... in s. The user
// information ends at the last '@' before the first '/' after the
// scheme, so that a password holding '@', '?', '#' or ',' is masked
// whole and an '@' in a path is not taken for one. Without a path, an
// '@' may also be in the query (redis://h:1?password=p@ss): then both
// readings are masked, the user information up to the last '@' before
// the first '?' too. The query starts at the first '?' after the user
// information, its parameters are separated by '&' or ';', and it ends
// at '#'. A user information without ':' is masked whole when the scheme
// reads it as a password (loneSecret).
func uriSpans(s, valueEnds string, add func(a, b int)) {
	for i := 0; ; {
		k := strings.Index(s[i:], "://")
		if k < 0 {
			return
		}
		lone := loneSecret(schemeBefore(s, i+k))
		start := i + k + 3
		end := tokenEnd(s, start)
		authEnd := end
		if slash := strings.IndexByte(s[start:end], '/'); slash >= 0 {
			authEnd = start + slash
		}
		qEnd := authEnd
		if q := strings.IndexByte(s[start:authEnd], '?'); q >= 0 {
			qEnd = start + q
		}
		for _, regionEnd := range []int{authEnd, qEnd} {
			hostStart := start
			if at := strings.LastIndexByte(s[start:regionEnd], '@'); at >= 0 {
				if colon := strings.IndexByte(s[start:start+at], ':'); colon >= 0 {
					add(start+colon+1, start+at)
				} else if lone {
					add(start, start+at)
				}
				hostStart = start + at + 1
			}
			querySpans(s, hostStart, end, valueEnds, add)
		}
		// Go on after the scheme: a URI in a query value is another URI.
		i = start
	}
}

// querySpans finds the secret query parameters of the URI whose host
// starts at hostStart and which ends at end.
func querySpans(s string, hostStart, end int, valueEnds string, add func(a, b int)) {
	q := strings.IndexByte(s[hostStart:end], '?')
	if q < 0 {
		return
	}
	qs, qe := hostStart+q+1, end
	if h := strings.IndexByte(s[qs:qe], '#'); h >= 0 {
		qe = qs + h
	}
	for ps := qs; ps < qe; {
		pe := qe
		if sep := strings.IndexAny(s[ps:qe], "&;"); sep >= 0 {
			pe = ps + sep
		}
		if eq := strings.IndexByte(s[ps:pe], '='); eq > 0 {
			key := s[ps : ps+eq]
			if dec, err := url.QueryUnescape(key); err == nil {
				key = dec
			}
			if SecretKey(key) {
				ve := pe
				if e := strings.IndexAny(s[ps+eq+1:pe], valueEnds); valueEnds != "" && e >= 0 {
					ve = ps + eq + 1 + e
				}
				add(ps+eq+1, ve)
			}
		}
		ps = pe + 1
	}
}

// dsnSpans finds the password of a Go MySQL DSN, user:password@tcp(...).
func dsnSpans(s string, add func(a, b int)) {
	for _, marker := range []string{"@tcp(", "@tcp4(", "@tcp6(", "@unix("} {
		for i := 0; ; {
			k := strings.Index(s[i:], marker)
			if k < 0 {
				break
			}
			at := i + k
			i = at + len(marker)
			ts := at
			for ts > 0 && !strings.ContainsRune(ends, rune(s[ts-1])) {
				ts--
			}
			tok := s[ts:at]
			if strings.Contains(tok, "://") {
				continue // a URI: uriSpans reads it
			}
			if colon := strings.IndexByte(tok, ':'); colon >= 0 {
				add(ts+colon+1, at)
			}
		}
	}
}

// bareSpans finds key=value pairs outside URIs whose key names a secret
// (a PostgreSQL conninfo: password=PW, password = 'P W').
func bareSpans(s, valueEnds string, add func(a, b int)) {
	isKey := func(c byte) bool {
		return c == '_' || c == '.' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	for i := 0; ; {
		k := strings.IndexByte(s[i:], '=')
		if k < 0 {
			return
		}
		eq := i + k
		i = eq + 1
		ke := eq
		for ke > 0 && s[ke-1] == ' ' {
			ke--
		}
		ks := ke
		for ks > 0 && isKey(s[ks-1]) {
			ks--
		}
		if ks == ke || !bareSecret(s[ks:ke]) {
			continue
		}
		v := eq + 1
		for v < len(s) && s[v] == ' ' {
			v++
		}
		if v < len(s) && s[v] == '=' {
			continue // "==": no value (base64 padding)
		}
		if v < len(s) && s[v] == '\'' {
			// A quoted conninfo value: up to the next unescaped quote.
			e := v + 1
			for e < len(s) && s[e] != '\'' {
				if s[e] == '\\' {
					e++
				}
				e++
			}
			add(v+1, min(e, len(s)))
			continue
		}
		e := v
		for e < len(s) && !strings.ContainsRune(ends+"&;"+valueEnds, rune(s[e])) {
			e++
		}
		for e > v && strings.ContainsRune(trailing, rune(s[e-1])) {
			e--
		}
		add(v, e)
	}
}

// redisArgs is what Redis writes before the arguments it echoes in an
// error: "ERR unknown command 'AUTH', with args beginning with: 'pw' "
// (Redis 6: `AUTH`, with args beginning with: `pw`, ).
const redisArgs = "with args beginning with:"

// redisArgSpans finds the secrets among the arguments a Redis error
// echoes: every argument of AUTH, and those after AUTH in a HELLO (the
// user and the password).
func redisArgSpans(s string, add func(a, b int)) {
	lower := strings.ToLower(s)
	for i := 0; ; {
		k := strings.Index(lower[i:], redisArgs)
		if k < 0 {
			return
		}
		at := i + k
		i = at + len(redisArgs)
		// The command is the last quoted word before, within the error.
		before := strings.TrimRight(lower[max(0, at-40):at], " ,")
		cmd := ""
		if n := len(before); n > 1 && (before[n-1] == '\'' || before[n-1] == '`') {
			if o := strings.LastIndexByte(before[:n-1], before[n-1]); o >= 0 {
				cmd = before[o+1 : n-1]
			}
		}
		if cmd != "auth" && cmd != "hello" {
			continue
		}
		secret := cmd == "auth"
		for p := i; ; {
			for p < len(s) && (s[p] == ' ' || s[p] == ',') {
				p++
			}
			if p >= len(s) || s[p] != '\'' && s[p] != '`' {
				break
			}
			e := strings.IndexByte(s[p+1:], s[p])
			if e < 0 {
				add(p+1, len(s)) // cut short: mask to the end
				break
			}
			arg := s[p+1 : p+1+e]
			if secret {
				add(p+1, p+1+e)
			} else if strings.EqualFold(arg, "auth") {
				secret = true
			}
			p = p + 1 + e + 1
		}
	}
}

// Writer returns a writer that masks the secrets of each write to w (see
// Text): for loggers that print drivers' messages, each message in one
// write.
func Writer(w io.Writer) io.Writer { return writer{w} }

type writer struct{ w io.Writer }

func (w writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.w, Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
