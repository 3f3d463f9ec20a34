package geo

import (
	"fmt"
	"strings"
	"testing"
)

// The report lists the first shownAnswers users' answers and says how
// many more results.json holds; a short list is shown whole.
func TestFirstAnswers(t *testing.T) {
	var users []string
	for u := 0; u < 30; u++ {
		users = append(users, fmt.Sprintf("%d: %d (20 min)", u*83, u+1))
	}
	all := strings.Join(users, "; ")
	got := firstAnswers(all, 12)
	if !strings.HasPrefix(got, strings.Join(users[:12], "; ")+"; and 18 more users'") || strings.Contains(got, users[12]) {
		t.Errorf("firstAnswers = %q", got)
	}
	if short := strings.Join(users[:5], "; "); firstAnswers(short, 12) != short {
		t.Errorf("a short list was cut: %q", firstAnswers(short, 12))
	}
}
