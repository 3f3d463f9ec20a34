// Package mdhtml converts the Markdown storebench's reports are written in
// to HTML, so report.html carries every section report.md has, including
// those a new workload registers, without a second renderer per table.
//
// It handles the subset the reports use: ATX headings, paragraphs, pipe
// tables with alignment, bullet and numbered lists (nested by
// indentation), block quotes, fenced code, rules, **strong**, *em*,
// `code`, <br>, links and images, backslash escapes, and one-line HTML
// comments (kept, so a caller can put markers in the Markdown and find
// them in the HTML). Everything else is text and is escaped: no raw HTML
// passes through, and link targets are limited to http(s), mailto,
// relative paths and anchors.
package mdhtml

import (
	"fmt"
	"html"
	"regexp"
	"strings"
)

// Heading is one heading of the document, for a table of contents.
type Heading struct {
	Level int
	ID    string
	// HTML is the heading's inline content, already converted.
	HTML string
}

// Convert renders Markdown as an HTML fragment and lists its headings.
// Heading IDs are unique within one call.
func Convert(md string) (string, []Heading) {
	c := &converter{ids: map[string]int{}}
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	c.blocks(lines)
	return c.out.String(), c.heads
}

type converter struct {
	out   strings.Builder
	heads []Heading
	ids   map[string]int
}

var (
	headingRe = regexp.MustCompile(`^(#{1,6})[ \t]+(.*?)[ \t#]*$`)
	ruleRe    = regexp.MustCompile(`^ {0,3}(-[ \t]*-[ \t]*-[- \t]*|\*[ \t]*\*[ \t]*\*[* \t]*|_[ \t]*_[ \t]*_[_ \t]*)$`)
	bulletRe  = regexp.MustCompile(`^( *)([-*+])[ \t]+(.*)$`)
	orderedRe = regexp.MustCompile(`^( *)(\d{1,9})[.)][ \t]+(.*)$`)
	commentRe = regexp.MustCompile(`^[ \t]*<!--(.*?)-->[ \t]*$`)
	sepCellRe = regexp.MustCompile(`^[ \t]*:?-+:?[ \t]*$`)
)

// blocks converts a sequence of lines.
func (c *converter) blocks(lines []string) {
	for i := 0; i < len(lines); {
		line := lines[i]
		trim := strings.TrimSpace(line)
		switch {
		case trim == "":
			i++
		case commentRe.MatchString(line):
			// "--" cannot occur inside an HTML comment.
			inner := strings.ReplaceAll(commentRe.FindStringSubmatch(line)[1], "--", "")
			c.out.WriteString("<!--" + inner + "-->\n")
			i++
		case strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~"):
			i = c.fence(lines, i)
		case headingRe.MatchString(line):
			m := headingRe.FindStringSubmatch(line)
			c.heading(len(m[1]), m[2])
			i++
		case ruleRe.MatchString(line):
			c.out.WriteString("<hr>\n")
			i++
		case strings.HasPrefix(trim, ">"):
			i = c.quote(lines, i)
		case isTableStart(lines, i):
			i = c.table(lines, i)
		case bulletRe.MatchString(line) || orderedRe.MatchString(line):
			i = c.list(lines, i)
		default:
			i = c.paragraph(lines, i)
		}
	}
}

// startsBlock says whether a line interrupts a paragraph.
func startsBlock(lines []string, i int) bool {
	line := lines[i]
	trim := strings.TrimSpace(line)
	return trim == "" || headingRe.MatchString(line) || ruleRe.MatchString(line) ||
		strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~") || strings.HasPrefix(trim, ">") ||
		commentRe.MatchString(line) || isTableStart(lines, i) ||
		bulletRe.MatchString(line) || orderedRe.MatchString(line)
}

func (c *converter) heading(level int, text string) {
	id := slug(text)
	if n := c.ids[id]; n > 0 {
		c.ids[id] = n + 1
		id = fmt.Sprintf("%s-%d", id, n+1)
	} else {
		c.ids[id] = 1
	}
	in := inline(text)
	c.heads = append(c.heads, Heading{Level: level, ID: id, HTML: in})
	fmt.Fprintf(&c.out, "<h%d id=\"%s\">%s</h%d>\n", level, id, in, level)
}

// slug makes an anchor ID from heading text: lower case letters and
// digits joined by dashes.
func slug(text string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(text) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
	}
	if b.Len() == 0 {
		return "section"
	}
	return b.String()
}

func (c *converter) fence(lines []string, i int) int {
	open := strings.TrimSpace(lines[i])
	marker := open[:3]
	c.out.WriteString("<pre><code>")
	i++
	for ; i < len(lines); i++ {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), marker) {
			i++
			break
		}
		c.out.WriteString(html.EscapeString(lines[i]) + "\n")
	}
	c.out.WriteString("</code></pre>\n")
	return i
}

func (c *converter) quote(lines []string, i int) int {
	var inner []string
	for ; i < len(lines); i++ {
		trim := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(trim, ">") {
			break
		}
		trim = strings.TrimPrefix(trim, ">")
		inner = append(inner, strings.TrimPrefix(trim, " "))
	}
	c.out.WriteString("<blockquote>\n")
	c.blocks(inner)
	c.out.WriteString("</blockquote>\n")
	return i
}

func (c *converter) paragraph(lines []string, i int) int {
	var parts []string
	for ; i < len(lines); i++ {
		if len(parts) > 0 && startsBlock(lines, i) {
			break
		}
		line := lines[i]
		// Two trailing spaces or a trailing backslash: a hard break.
		hard := strings.HasSuffix(line, "  ") || strings.HasSuffix(strings.TrimRight(line, " "), "\\")
		text := inline(strings.TrimSuffix(strings.TrimSpace(line), "\\"))
		if hard {
			text += "<br>"
		}
		parts = append(parts, text)
	}
	c.out.WriteString("<p>" + strings.Join(parts, "\n") + "</p>\n")
	return i
}

// isTableStart: a pipe row followed by a separator row (|---|---:|).
func isTableStart(lines []string, i int) bool {
	if i+1 >= len(lines) || !strings.Contains(lines[i], "|") {
		return false
	}
	cells := splitRow(lines[i+1])
	if len(cells) == 0 {
		return false
	}
	for _, cell := range cells {
		if !sepCellRe.MatchString(cell) {
			return false
		}
	}
	return true
}

// splitRow splits a table row on pipes that are neither escaped (\|) nor
// inside a code span, dropping the outer pipes.
func splitRow(line string) []string {
	s := strings.TrimSpace(line)
	s = strings.TrimPrefix(s, "|")
	if strings.HasSuffix(s, "|") && !strings.HasSuffix(s, "\\|") {
		s = s[:len(s)-1]
	}
	var cells []string
	var cur strings.Builder
	code := 0 // length of the backtick run that opened a code span
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\\' && i+1 < len(s) && s[i+1] == '|':
			cur.WriteString("\\|")
			i++
		case ch == '`':
			n := 1
			for i+n < len(s) && s[i+n] == '`' {
				n++
			}
			if code == 0 {
				code = n
			} else if code == n {
				code = 0
			}
			cur.WriteString(s[i : i+n])
			i += n - 1
		case ch == '|' && code == 0:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(ch)
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

func (c *converter) table(lines []string, i int) int {
	head := splitRow(lines[i])
	var aligns []string
	for _, sep := range splitRow(lines[i+1]) {
		sep = strings.TrimSpace(sep)
		l, r := strings.HasPrefix(sep, ":"), strings.HasSuffix(sep, ":")
		switch {
		case l && r:
			aligns = append(aligns, "center")
		case r:
			aligns = append(aligns, "right")
		case l:
			aligns = append(aligns, "left")
		default:
			aligns = append(aligns, "")
		}
	}
	cell := func(tag string, k int, text string) {
		attr := ""
		if k < len(aligns) && aligns[k] != "" {
			attr = fmt.Sprintf(` style="text-align:%s"`, aligns[k])
		}
		fmt.Fprintf(&c.out, "<%s%s>%s</%s>", tag, attr, inline(strings.ReplaceAll(text, "\\|", "|")), tag)
	}
	c.out.WriteString("<div class=\"table\"><table>\n<thead><tr>")
	for k, h := range head {
		cell("th", k, h)
	}
	c.out.WriteString("</tr></thead>\n<tbody>\n")
	for i += 2; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "" || !strings.Contains(lines[i], "|") {
			break
		}
		row := splitRow(lines[i])
		c.out.WriteString("<tr>")
		for k := range head {
			text := ""
			if k < len(row) {
				text = row[k]
			}
			cell("td", k, text)
		}
		c.out.WriteString("</tr>\n")
	}
	c.out.WriteString("</tbody></table></div>\n")
	return i
}

// list converts a run of items of one kind at one indentation; deeper
// indented lines belong to the item above and are converted as blocks.
func (c *converter) list(lines []string, i int) int {
	first := lines[i]
	ordered := !bulletRe.MatchString(first)
	indent := len(first) - len(strings.TrimLeft(first, " "))
	tag := "ul"
	if ordered {
		tag = "ol"
	}
	c.out.WriteString("<" + tag + ">\n")
	for i < len(lines) {
		m := bulletRe.FindStringSubmatch(lines[i])
		if ordered {
			m = orderedRe.FindStringSubmatch(lines[i])
		}
		if m == nil || len(m[1]) != indent {
			break
		}
		item := []string{m[3]}
		i++
		for i < len(lines) {
			l := lines[i]
			ind := len(l) - len(strings.TrimLeft(l, " "))
			if strings.TrimSpace(l) == "" {
				// A blank line continues the item only if indented text follows.
				if i+1 < len(lines) && len(lines[i+1])-len(strings.TrimLeft(lines[i+1], " ")) > indent && strings.TrimSpace(lines[i+1]) != "" {
					item = append(item, "")
					i++
					continue
				}
				break
			}
			if ind <= indent && (bulletRe.MatchString(l) || orderedRe.MatchString(l) || startsBlock(lines, i)) {
				break
			}
			if ind > indent {
				l = strings.TrimLeft(l, " ")
				if ind-indent > 2 {
					// keep relative indentation of nested lists
					l = strings.Repeat(" ", ind-indent-2) + l
				}
			}
			item = append(item, l)
			i++
		}
		c.out.WriteString("<li>")
		c.item(item)
		c.out.WriteString("</li>\n")
		// Blank lines between items of the same list.
		for i < len(lines) && strings.TrimSpace(lines[i]) == "" && i+1 < len(lines) && sameList(lines[i+1], ordered, indent) {
			i++
		}
	}
	c.out.WriteString("</" + tag + ">\n")
	return i
}

func sameList(line string, ordered bool, indent int) bool {
	m := bulletRe.FindStringSubmatch(line)
	if ordered {
		m = orderedRe.FindStringSubmatch(line)
	}
	return m != nil && len(m[1]) == indent
}

// item writes a list item: its first paragraph inline, anything after it
// (a nested list, a second paragraph) as blocks.
func (c *converter) item(lines []string) {
	end := 0
	for end < len(lines) && strings.TrimSpace(lines[end]) != "" && (end == 0 || !startsBlock(lines, end)) {
		end++
	}
	var parts []string
	for _, l := range lines[:end] {
		parts = append(parts, inline(strings.TrimSpace(l)))
	}
	c.out.WriteString(strings.Join(parts, "\n"))
	if end < len(lines) {
		c.out.WriteString("\n")
		c.blocks(lines[end:])
	}
}

// inline converts emphasis, code, links, images, <br> and escapes, and
// escapes everything else.
func inline(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		ch := s[i]
		switch {
		case ch == '\\' && i+1 < len(s) && isPunct(s[i+1]):
			b.WriteString(html.EscapeString(s[i+1 : i+2]))
			i += 2
		case ch == '`':
			n := run(s, i, '`')
			if end := strings.Index(s[i+n:], strings.Repeat("`", n)); end >= 0 {
				code := strings.TrimSpace(s[i+n : i+n+end])
				b.WriteString("<code>" + html.EscapeString(code) + "</code>")
				i += n + end + n
			} else {
				b.WriteString(s[i : i+n])
				i += n
			}
		case ch == '<':
			if n := brTag(s[i:]); n > 0 {
				b.WriteString("<br>")
				i += n
			} else {
				b.WriteString("&lt;")
				i++
			}
		case (ch == '*' || ch == '_') && i+1 < len(s) && s[i+1] == ch:
			if end := closing(s, i+2, s[i:i+2]); end > i+2 && canOpen(s, i, 2) {
				b.WriteString("<strong>" + inline(s[i+2:end]) + "</strong>")
				i = end + 2
			} else {
				b.WriteString(s[i : i+2])
				i += 2
			}
		case ch == '*' || ch == '_':
			if end := closing(s, i+1, s[i:i+1]); end > i+1 && canOpen(s, i, 1) {
				b.WriteString("<em>" + inline(s[i+1:end]) + "</em>")
				i = end + 1
			} else {
				b.WriteByte(ch)
				i++
			}
		case ch == '!' && i+1 < len(s) && s[i+1] == '[':
			if text, url, n := link(s[i+1:]); n > 0 {
				if safeURL(url) {
					fmt.Fprintf(&b, `<img src="%s" alt="%s">`, html.EscapeString(url), html.EscapeString(text))
				} else {
					b.WriteString(html.EscapeString(text))
				}
				i += 1 + n
			} else {
				b.WriteByte('!')
				i++
			}
		case ch == '[':
			if text, url, n := link(s[i:]); n > 0 {
				if safeURL(url) {
					fmt.Fprintf(&b, `<a href="%s">%s</a>`, html.EscapeString(url), inline(text))
				} else {
					b.WriteString(inline(text))
				}
				i += n
			} else {
				b.WriteByte('[')
				i++
			}
		default:
			b.WriteString(html.EscapeString(s[i : i+1]))
			i++
		}
	}
	return b.String()
}

func isPunct(c byte) bool { return strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) >= 0 }

func run(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}

// brTag matches <br>, <br/> and <br /> (any case) at the start of s.
func brTag(s string) int {
	for _, t := range []string{"<br>", "<br/>", "<br />"} {
		if len(s) >= len(t) && strings.EqualFold(s[:len(t)], t) {
			return len(t)
		}
	}
	return 0
}

// canOpen: an emphasis delimiter opens when followed by a non-space, and,
// for underscores, not preceded by a letter or digit (snake_case names
// such as bloom_filter stay as they are).
func canOpen(s string, i, n int) bool {
	if i+n >= len(s) || s[i+n] == ' ' {
		return false
	}
	if s[i] == '_' && i > 0 && isWord(s[i-1]) {
		return false
	}
	return true
}

// closing finds the delimiter that closes emphasis opened before from:
// preceded by a non-space, and for underscores not followed by a word
// character. -1 if none.
func closing(s string, from int, delim string) int {
	for j := from; j+len(delim) <= len(s); j++ {
		if s[j] == '\\' {
			j++
			continue
		}
		if s[j] == '`' {
			// skip code spans: emphasis markers inside them are literal
			n := run(s, j, '`')
			if end := strings.Index(s[j+n:], strings.Repeat("`", n)); end >= 0 {
				j += n + end + n - 1
				continue
			}
		}
		if s[j:j+len(delim)] != delim || s[j-1] == ' ' {
			continue
		}
		// A single delimiter must not be half of a double one.
		if len(delim) == 1 && j+1 < len(s) && s[j+1] == delim[0] {
			j++
			continue
		}
		if delim[0] == '_' && j+len(delim) < len(s) && isWord(s[j+len(delim)]) {
			continue
		}
		return j
	}
	return -1
}

func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// link parses [text](url) at the start of s and returns its length.
func link(s string) (text, url string, n int) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				if i+1 >= len(s) || s[i+1] != '(' {
					return "", "", 0
				}
				// The URL ends at the ) that balances the (.
				end, open := -1, 1
				for j := i + 2; j < len(s) && end < 0; j++ {
					switch s[j] {
					case '(':
						open++
					case ')':
						if open--; open == 0 {
							end = j - (i + 2)
						}
					}
				}
				if end < 0 {
					return "", "", 0
				}
				target := strings.TrimSpace(s[i+2 : i+2+end])
				// An optional title after the URL is dropped.
				if sp := strings.IndexAny(target, " \t"); sp >= 0 {
					target = target[:sp]
				}
				return s[1:i], strings.Trim(target, "<>"), i + 2 + end + 1
			}
		}
	}
	return "", "", 0
}

// safeURL admits web and mail links, anchors and relative paths; not
// javascript:, data: or other schemes.
func safeURL(u string) bool {
	l := strings.ToLower(u)
	if strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "mailto:") {
		return true
	}
	colon := strings.IndexByte(l, ':')
	slash := strings.IndexAny(l, "/?#")
	return colon < 0 || (slash >= 0 && slash < colon)
}
