package node_test

import (
	"testing"

	_ "storebench/internal/server/node" // registers "node"
	"storebench/internal/server/web/webtest"
)

func TestServer(t *testing.T) { webtest.Run(t, "node") }
