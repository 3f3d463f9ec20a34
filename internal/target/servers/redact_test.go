package servers_test

import (
	"strings"
	"testing"

	"storebench/internal/redact"
	_ "storebench/internal/target/servers"
)

// The targets whose lone URI user information is a password declare it
// when they register (target.Info.LoneUserSecret), so that every URI of
// theirs is masked: package redact knows no scheme of its own.
func TestLoneUserSecretsAreDeclared(t *testing.T) {
	for _, u := range []string{"redis://S3cret@h:1/0", "rediss://S3cret@h:1/0", "redis-cluster://S3cret@h:1", "memcached://S3cret@h:11211"} {
		if got := redact.Text(u); strings.Contains(got, "S3cret") {
			t.Errorf("%s shown as %s", u, got)
		}
	}
}
