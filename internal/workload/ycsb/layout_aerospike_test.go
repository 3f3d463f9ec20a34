package ycsb_test

import (
	"bytes"
	"strings"
	"testing"

	"storebench/internal/target/conn"
	"storebench/internal/workload/ycsb"
)

func TestFieldBins(t *testing.T) {
	names := ycsb.FieldNames(4)
	if strings.Join(names, ",") != "field0,field1,field2,field3" {
		t.Fatalf("names %v", names)
	}
	fields := [][]byte{[]byte("a"), []byte("bb"), []byte("ccc"), []byte("dddd")}
	bins, err := ycsb.FieldBins(names, fields)
	if err != nil || len(bins) != 4 {
		t.Fatalf("FieldBins: %d bins, %v", len(bins), err)
	}
	got, err := ycsb.FieldsFromBins(names, conn.AerospikeReadBack(bins, false))
	if err != nil {
		t.Fatal(err)
	}
	for i := range fields {
		if !bytes.Equal(got[i], fields[i]) {
			t.Errorf("field %d: %q, want %q", i, got[i], fields[i])
		}
	}
	// A partial update writes only the non-nil fields.
	bins, _ = ycsb.FieldBins(names, [][]byte{nil, []byte("new"), nil, nil})
	if len(bins) != 1 || bins[0].Name != "field1" {
		t.Errorf("partial update bins %v", bins)
	}
	if _, err := ycsb.FieldBins(names, make([][]byte, 5)); err == nil {
		t.Error("FieldBins accepted more fields than the table has")
	}
}
