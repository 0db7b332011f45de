package aacp_test

import (
	"testing"

	"github.com/keelmcp/keel/aacp"
	"github.com/keelmcp/keel/aacp/storetest"
)

func TestMemoryStoreConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) aacp.Store { return aacp.NewMemoryStore() })
}
