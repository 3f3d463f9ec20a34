package target

import (
	"net/url"
	"strings"
)

// Passwords in URIs are never printed or stored: not on the screen, not in
// a log, not in results.json, not in the study text kept with a run. The
// functions here find them in a URI, a command line or any text that may
// hold URIs (a study's YAML).

// mask replaces a password.
const mask = "xxxxx"

// passwordSpans returns the [start, end) byte ranges of the passwords of
// every URI in s: in scheme://user:password@host, the bytes after the
// first ':' of the user information up to its '@'. The user information
// ends at the last '@' before the first '/' of the URI, so a password
// that holds '@', '?', '#' or ',' (valid in a study file, if not in a
// --targets list) is masked whole, and an '@' in a path or query is not
// taken for one. A URI ends at white space or a quote.
func passwordSpans(s string) [][2]int {
	var spans [][2]int
	for i := 0; ; {
		k := strings.Index(s[i:], "://")
		if k < 0 {
			return spans
		}
		start := i + k + 3
		end := start
		for end < len(s) && !strings.ContainsRune(" \t\r\n\"'`", rune(s[end])) {
			end++
		}
		auth := s[start:end]
		if slash := strings.IndexByte(auth, '/'); slash >= 0 {
			auth = auth[:slash]
		}
		i = start
		at := strings.LastIndexByte(auth, '@')
		if at < 0 {
			continue
		}
		if colon := strings.IndexByte(auth[:at], ':'); colon >= 0 {
			spans = append(spans, [2]int{start + colon + 1, start + at})
		}
		i = start + at
	}
}

// RedactText masks the password of every URI in s (a command line, a
// study's YAML, a message) with xxxxx.
func RedactText(s string) string {
	spans := passwordSpans(s)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp[0]])
		b.WriteString(mask)
		last = sp[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// RedactURI hides the password of a URI for printing.
func RedactURI(uri string) string { return RedactText(uri) }

// RedactCommand returns a copy of a command line with the password of
// every URI in its arguments masked: what a run stores as its command.
func RedactCommand(args []string) []string {
	if args == nil {
		return nil
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = RedactText(a)
	}
	return out
}

// Scrub removes a URI's password, raw or percent-decoded, from msg: driver
// errors often quote the connection string.
func Scrub(uri, msg string) string {
	msg = strings.ReplaceAll(msg, uri, RedactURI(uri))
	for _, sp := range passwordSpans(uri) {
		pw := uri[sp[0]:sp[1]]
		if pw == "" {
			continue
		}
		msg = strings.ReplaceAll(msg, pw, mask)
		if dec, err := url.PathUnescape(pw); err == nil && dec != "" {
			msg = strings.ReplaceAll(msg, dec, mask)
		}
	}
	return msg
}
