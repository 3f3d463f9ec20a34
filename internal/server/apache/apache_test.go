package apache_test

import (
	"testing"

	_ "storebench/internal/server/apache" // registers "apache"
	"storebench/internal/server/web/webtest"
)

func TestServer(t *testing.T) { webtest.Run(t, "apache") }
