package documents

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// AppendJSON appends d as a JSON object with the tool's field names, for
// the targets that keep documents as JSON (PostgreSQL jsonb, SQLite's
// JSON functions). Numbers are written as integers, which both keep
// exactly (jsonb numeric, SQLite's 64-bit integers).
func AppendJSON(b []byte, d *Doc) []byte {
	b = append(b, `{"_id":`...)
	b = strconv.AppendInt(b, d.ID, 10)
	b = append(b, `,"threadId":`...)
	b = strconv.AppendInt(b, int64(d.ThreadID), 10)
	b = append(b, `,"threadRunCount":`...)
	b = strconv.AppendInt(b, d.ThreadRunCount, 10)
	b = append(b, `,"rnd":`...)
	b = strconv.AppendInt(b, d.Rnd, 10)
	if d.Text != "" {
		b = append(b, `,"rndTxt":`...)
		t, _ := json.Marshal(d.Text)
		b = append(b, t...)
	}
	b = append(b, `,"v":`...)
	b = strconv.AppendInt(b, int64(d.V), 10)
	return append(b, '}')
}

type jsonDoc struct {
	ID             *int64 `json:"_id"`
	ThreadID       int32  `json:"threadId"`
	ThreadRunCount int64  `json:"threadRunCount"`
	Rnd            int64  `json:"rnd"`
	Text           string `json:"rndTxt"`
	V              int32  `json:"v"`
}

// ParseJSON reads a document AppendJSON wrote (as the store returns it).
func ParseJSON(b []byte, d *Doc) error {
	var j jsonDoc
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("document is not the expected JSON: %w", err)
	}
	if j.ID == nil {
		return fmt.Errorf("document has no _id")
	}
	*d = Doc{ID: *j.ID, ThreadID: j.ThreadID, ThreadRunCount: j.ThreadRunCount, Rnd: j.Rnd, Text: j.Text, V: j.V}
	return nil
}
