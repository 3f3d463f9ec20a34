package study

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// DeprecatedKey is params node n (at study path path, e.g.
// "workloads.ledger.params") with a field given by its old name read as
// the new one: old and new are dotted paths below n with the same parent
// ("stress.workers", "stress.goroutines"). Where the old key is given
// and the new is not, the result holds it under the new name, in copies
// of the nodes on its path (n's own, the study's, are left as they are);
// decode the result with DecodeParams. A mapping that gives both is an
// error naming both.
func DeprecatedKey(file string, n yaml.Node, path, old, new string) (yaml.Node, error) {
	dir, oldKey := splitLast(old)
	newDir, newKey := splitLast(new)
	if dir != newDir {
		panic("study.DeprecatedKey: " + old + " and " + new + " have different parents")
	}
	out := n
	cur := &out
	if dir != "" {
		for _, part := range strings.Split(dir, ".") {
			if cur = childCopy(cur, part); cur == nil {
				return n, nil
			}
		}
	}
	if cur.Kind != yaml.MappingNode {
		return n, nil
	}
	o, w := keyIndex(cur, oldKey), keyIndex(cur, newKey)
	switch {
	case o < 0:
		return n, nil
	case w >= 0:
		return n, &Error{File: file, Line: cur.Content[o].Line, Field: join(path, old),
			Msg: fmt.Sprintf("the old name of %s, which is given too: give %s alone", new, new)}
	}
	cur.Content = slices.Clone(cur.Content)
	for i := 0; i+1 < len(cur.Content); i += 2 {
		if cur.Content[i].Value == oldKey {
			k := *cur.Content[i]
			k.Value = newKey
			cur.Content[i] = &k
		}
	}
	return out, nil
}

// splitLast splits a dotted path into its parent ("" at the top) and its
// last part.
func splitLast(path string) (dir, last string) {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i], path[i+1:]
	}
	return "", path
}

// keyIndex is the index in mapping m's Content of key's first occurrence
// (-1: none).
func keyIndex(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return i
		}
	}
	return -1
}

// childCopy replaces the value of key in mapping m (an alias resolved)
// by a copy of it in a copy of m's Content, and returns the copy; nil
// when m is no mapping or has no key.
func childCopy(m *yaml.Node, key string) *yaml.Node {
	if m.Kind == yaml.AliasNode && m.Alias != nil {
		*m = *m.Alias
	}
	if m.Kind != yaml.MappingNode {
		return nil
	}
	i := keyIndex(m, key)
	if i < 0 {
		return nil
	}
	m.Content = slices.Clone(m.Content)
	child := *m.Content[i+1]
	if child.Kind == yaml.AliasNode && child.Alias != nil {
		child = *child.Alias
	}
	m.Content[i+1] = &child
	return &child
}
