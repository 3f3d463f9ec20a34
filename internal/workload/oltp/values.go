package oltp

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"storebench/internal/workload/gen"
)

// sysbench's value formats (oltp_common.lua's c_value_template and
// pad_value_template): groups of 11 random digits separated by '-', ten
// groups for c (119 characters in a CHAR(120)), five for pad (59 in a
// CHAR(60)).
const (
	groupDigits = 11
	cGroups     = 10
	padGroups   = 5
	// CLen and PadLen are the values' lengths without CHAR padding.
	CLen   = cGroups*(groupDigits+1) - 1
	PadLen = padGroups*(groupDigits+1) - 1
)

const group = 100_000_000_000 // 10^11

// Values are generated, never stored: a row's c and pad come from the seed,
// the table, the id and a nonce (0 for the prepared rows, the writing
// transaction's for the rows write_only writes). The last group of c is
// not random but a check of the other nine bound to the seed, table and
// id, so any c read by its id is verified whoever wrote it, and a value
// written to the wrong row or torn shows.

// fillGroups writes n groups of 11 digits from the random stream s into
// dst (len n*12-1), dashes between them, and returns the stream.
func fillGroups(dst []byte, n int, s uint64) uint64 {
	for g := 0; g < n; g++ {
		s = gen.SplitMix(s)
		putGroup(dst[g*(groupDigits+1):], s%group)
		if g < n-1 {
			dst[g*(groupDigits+1)+groupDigits] = '-'
		}
	}
	return s
}

func putGroup(dst []byte, v uint64) {
	for i := groupDigits - 1; i >= 0; i-- {
		dst[i] = byte('0' + v%10)
		v /= 10
	}
}

func check(seed uint64, table int, id int64, head []byte) uint64 {
	h := uint64(0xcbf29ce484222325)
	for _, c := range head {
		h ^= uint64(c)
		h *= 0x100000001b3
	}
	return gen.Mix(seed, uint64(table), uint64(id), h) % group
}

// FillC writes the c of row id of table (nonce 0: as prepared) into dst,
// which must hold CLen bytes, and returns dst[:CLen].
func FillC(dst []byte, seed uint64, table int, id int64, nonce uint64) []byte {
	dst = dst[:CLen]
	head := CLen - groupDigits - 1
	fillGroups(dst[:head], cGroups-1, gen.Mix(seed, uint64(table), uint64(id), nonce, 'c'))
	dst[head] = '-'
	putGroup(dst[head+1:], check(seed, table, id, dst[:head]))
	return dst
}

// FillPad writes a pad value (PadLen bytes) into dst.
func FillPad(dst []byte, seed uint64, table int, id int64, nonce uint64) []byte {
	dst = dst[:PadLen]
	fillGroups(dst, padGroups, gen.Mix(seed, uint64(table), uint64(id), nonce, 'p'))
	return dst
}

// PrepareK is k of a prepared row: in [1, rows], drawn as sysbench's
// sb_rand(1, table_size) (its --rand-type: d).
func PrepareK(d *dist, seed uint64, table int, id, rows int64) int64 {
	g := rand{s: gen.Mix(seed, uint64(table), uint64(id), 'k')}
	if !d.special {
		return 1 + int64(g.s%uint64(rows))
	}
	return d.id(&g, rows)
}

// trim drops CHAR padding (PostgreSQL returns a CHAR(120) padded with
// blanks; MariaDB strips it).
func trim(v []byte) []byte { return bytes.TrimRight(v, " ") }

// cTemplate is '0' at c's digit positions and '-' between the groups;
// cAdd is what, added to a byte of v XOR cTemplate, sets its high bit when
// that byte is out of range (over 9 at a digit, non-zero at a dash).
var cTemplate, cAdd = func() (t, a [CLen]byte) {
	for i := range t {
		t[i], a[i] = '0', 0x80-10
		if i%(groupDigits+1) == groupDigits {
			t[i], a[i] = '-', 0x80-1
		}
	}
	return
}()

// WellFormed says why v is not in sysbench's c format ("" when it is).
// It runs for every row a read returns (several hundred per read_only
// transaction), so the common case is checked eight bytes at a time; the
// slow loop only finds what to say.
func WellFormed(v []byte) string {
	v = trim(v)
	if len(v) != CLen {
		return fmt.Sprintf("c has %d characters, want %d", len(v), CLen)
	}
	const hi = 0x8080808080808080
	bad := uint64(0)
	i := 0
	for ; i+8 <= CLen; i += 8 {
		// Each byte x of w: x >= 0x80 shows in w itself; otherwise x+add
		// cannot carry and has its high bit set exactly when x is out of
		// range.
		w := binary.LittleEndian.Uint64(v[i:]) ^ binary.LittleEndian.Uint64(cTemplate[i:])
		bad |= (w | (w + binary.LittleEndian.Uint64(cAdd[i:]))) & hi
	}
	for ; i < CLen; i++ {
		x := v[i] ^ cTemplate[i]
		bad |= uint64((x | (x + cAdd[i])) & 0x80)
	}
	if bad == 0 {
		return ""
	}
	for i, ch := range v {
		if i%(groupDigits+1) == groupDigits {
			if ch != '-' {
				return fmt.Sprintf("c has %q at %d, want '-'", ch, i)
			}
		} else if ch < '0' || ch > '9' {
			return fmt.Sprintf("c has %q at %d, want a digit", ch, i)
		}
	}
	return ""
}

// CheckC says why v cannot be the c of row id of table ("" when it is):
// well formed, and its last group is the check of the others for this
// seed, table and id.
func CheckC(v []byte, seed uint64, table int, id int64) string {
	if why := WellFormed(v); why != "" {
		return why
	}
	v = trim(v)
	head := CLen - groupDigits - 1
	var got uint64
	for _, ch := range v[head+1:] {
		got = got*10 + uint64(ch-'0')
	}
	if got != check(seed, table, id, v[:head]) {
		return "c does not belong to this row (its check group is wrong)"
	}
	return ""
}
