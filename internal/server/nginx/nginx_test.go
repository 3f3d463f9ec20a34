package nginx_test

import (
	"testing"

	_ "storebench/internal/server/nginx" // registers "nginx"
	"storebench/internal/server/web/webtest"
)

func TestServer(t *testing.T) { webtest.Run(t, "nginx") }
