package study

import (
	"errors"
	"fmt"

	goccy "github.com/goccy/go-yaml"
	goccyparser "github.com/goccy/go-yaml/parser"
)

// syntaxLine is the line to fix in a study yaml.v3 could not parse.
//
// yaml.v3 decides what a study file means, but its parser errors name
// the line where the enclosing mapping or list began, counted from 0 (a
// flow list left open on line 7 is "line 6", a key indented wrongly on
// line 12 of a mapping begun on line 5 is "line 4"). A study is edited by
// hand, so the line has to be the one to fix: goccy/go-yaml's parser,
// asked only after yaml.v3 has refused the file, names the token it could
// not take. Where it finds nothing wrong (the two disagree on what is
// YAML), yaml.v3's own line stands.
func syntaxLine(data []byte, yerr error) int {
	line := 0
	fmt.Sscanf(yerr.Error(), "yaml: line %d:", &line)
	_, err := goccyparser.ParseBytes(data, 0)
	var se *goccy.SyntaxError
	if errors.As(err, &se) && se.Token != nil && se.Token.Position != nil && se.Token.Position.Line > 0 {
		return se.Token.Position.Line
	}
	return line
}
