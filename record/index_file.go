package record

// The index's file: a header naming the files it stands for, the record
// (its summary as JSON, its tasks and task matrix), the names, then the
// trials; numbers as varints or 8-byte floats, texts as their length then
// their bytes, and last a checksum of all that.

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
)

// indexMagic starts an index file; indexVersion is its layout's version
// (another is not read: the index is made again).
const (
	indexMagic   = "forge trials.index\n"
	indexVersion = 1
)

// castagnoli is the CRC-32C table (computed by the processor where it can).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fileStamp is what tells a file's content apart: its size, modification
// time (nanoseconds) and the CRC-32C of all its bytes. A checksum of the
// whole file, not of its ends: a trial rewritten in the middle at the same
// size within one tick of the clock is seen too, for ~20 ms a 100 MB file.
type fileStamp struct {
	size, mtime int64
	sum         uint32
}

// absent is the stamp of a file that does not exist.
var absent = fileStamp{size: -1}

func stampBytes(b []byte, fi fs.FileInfo) fileStamp {
	return fileStamp{size: int64(len(b)), mtime: fi.ModTime().UnixNano(), sum: crc32.Checksum(b, castagnoli)}
}

// stampFile stamps f, reading it from its start.
func stampFile(f *os.File) (fileStamp, error) {
	fi, err := f.Stat()
	if err != nil {
		return fileStamp{}, err
	}
	sum := crc32.New(castagnoli)
	size, err := io.CopyBuffer(sum, io.NewSectionReader(f, 0, math.MaxInt64), readBuffer(f, 0))
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{size: size, mtime: fi.ModTime().UnixNano(), sum: sum.Sum32()}, nil
}

// stampPath stamps the file at path; absent when there is none.
func stampPath(path string) (fileStamp, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return absent, nil
	} else if err != nil {
		return fileStamp{}, err
	}
	defer f.Close()
	return stampFile(f)
}

// encode is x's file.
func (x *Index) encode() ([]byte, error) {
	e := &encoder{b: make([]byte, 0, 64+len(x.Trials)*48)}
	e.b = append(e.b, indexMagic...)
	e.uvarint(indexVersion)
	e.string(x.of.trialsName)
	e.stamp(x.of.trials)
	e.stamp(x.of.results)
	if err := e.record(x.Record); err != nil {
		return nil, err
	}
	e.uvarint(uint64(len(x.Names.list)))
	for _, s := range x.Names.list {
		e.string(s)
	}
	e.uvarint(uint64(len(x.Trials)))
	for i := range x.Trials {
		e.trial(&x.Trials[i])
	}
	return binary.LittleEndian.AppendUint32(e.b, crc32.Checksum(e.b, castagnoli)), nil
}

// decodeIndex reads an index file's bytes.
func decodeIndex(b []byte) (*Index, error) {
	n := len(b) - 4
	if n < len(indexMagic) || string(b[:len(indexMagic)]) != indexMagic {
		return nil, errors.New("not an index")
	}
	if binary.LittleEndian.Uint32(b[n:]) != crc32.Checksum(b[:n], castagnoli) {
		return nil, errors.New("its checksum is wrong")
	}
	d := &decoder{b: b[:n], at: len(indexMagic), names: map[string]string{}}
	if v := d.uvarint(); v != indexVersion {
		return nil, fmt.Errorf("layout %d, not %d", v, indexVersion)
	}
	x := NewIndex()
	x.of.trialsName = d.string()
	x.of.trials, x.of.results = d.stamp(), d.stamp()
	x.Record = d.record()
	names := d.count()
	x.Names.list, x.Names.at = make([]string, names), make(map[string]uint32, names)
	for i := range x.Names.list {
		x.Names.list[i] = d.name()
		x.Names.at[x.Names.list[i]] = uint32(i)
	}
	x.Trials = make([]IndexedTrial, d.count())
	for i := range x.Trials {
		d.trial(&x.Trials[i], uint32(names))
	}
	if d.err == nil && d.at != len(d.b) {
		d.err = errors.New("bytes after its trials")
	}
	if d.err != nil {
		return nil, d.err
	}
	return x, nil
}

type encoder struct{ b []byte }

func (e *encoder) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) float(v float64) {
	e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v))
}

func (e *encoder) string(s string) {
	e.uvarint(uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *encoder) stamp(s fileStamp) {
	e.varint(s.size)
	e.varint(s.mtime)
	e.uvarint(uint64(s.sum))
}

func (e *encoder) trial(t *IndexedTrial) {
	e.varint(t.Off)
	e.varint(int64(t.Len))
	e.uvarint(uint64(t.Candidate))
	e.uvarint(uint64(t.Task))
	e.varint(int64(t.Trial))
	e.varint(int64(t.attempts))
	e.uvarint(uint64(t.flags))
	if t.flags&hasExitCode != 0 {
		e.varint(int64(t.exitCode))
	}
	e.uvarint(uint64(t.kind))
	e.float(t.runtime)
	if t.flags&hasScore != 0 {
		e.float(t.score)
	}
	if t.flags&hasReward != 0 {
		e.float(t.reward)
	}
	e.varint(t.artifactBytes)
	e.string(t.message)
	if t.flags&hasNotes != 0 {
		e.notes(t.notes)
	}
}

// notes: the submit error, cost and pass mark (each after a bit saying it
// is there), the judges, the checks, the tampered tools.
func (e *encoder) notes(n *trialNotes) {
	e.string(n.submitError)
	var has uint64
	if n.cost != nil {
		has |= 1
	}
	if n.passMark != nil {
		has |= 2
	}
	e.uvarint(has)
	if c := n.cost; c != nil {
		e.float(c.USD)
		e.float(c.ModelUSD)
		e.float(c.SandboxUSD)
		e.varint(c.Tokens)
		e.string(c.Unpriced)
	}
	if n.passMark != nil {
		e.float(*n.passMark)
	}
	e.uvarint(uint64(len(n.judges)))
	for _, j := range n.judges {
		e.string(j.Name)
		e.string(j.Error)
	}
	e.uvarint(uint64(len(n.checks)))
	for _, c := range n.checks {
		e.string(c.Name)
		e.varint(int64(c.Passed))
		e.varint(int64(c.Of))
		e.string(c.Note)
		e.uvarint(uint64(len(c.Failed)))
		for _, f := range c.Failed {
			e.string(f.Check)
			e.string(f.Want)
			e.string(f.Got)
		}
	}
	e.uvarint(uint64(len(n.tampered)))
	for _, s := range n.tampered {
		e.string(s)
	}
}

// decoder reads what encoder wrote; its first error sticks, and what it
// reads then is zero.
type decoder struct {
	b   []byte
	at  int
	err error
	// names holds the ids read (name), each kept once however often the
	// file repeats it.
	names map[string]string
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("cut short or garbled at byte %d (%s)", d.at, what)
	}
}

func (d *decoder) uvarint() uint64 { return readVarint(d, binary.Uvarint) }
func (d *decoder) varint() int64   { return readVarint(d, binary.Varint) }

// readVarint reads a number with read (binary.Uvarint or Varint).
func readVarint[T uint64 | int64](d *decoder, read func([]byte) (T, int)) T {
	v, n := read(d.b[min(d.at, len(d.b)):])
	if n <= 0 {
		d.fail("a number")
		return 0
	}
	d.at += n
	return v
}

func (d *decoder) float() float64 {
	if d.err != nil || len(d.b)-d.at < 8 {
		d.fail("a number")
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.at:]))
	d.at += 8
	return v
}

// count is a list's length, no more than the bytes left (each element
// takes one at least).
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)-d.at) {
		d.fail("a count")
		return 0
	}
	return int(n)
}

func (d *decoder) bytes() []byte {
	n := d.count()
	if d.err != nil {
		return nil
	}
	b := d.b[d.at : d.at+n]
	d.at += n
	return b
}

// string is a text of its own: the file's bytes are not held for it.
func (d *decoder) string() string { return string(d.bytes()) }

// name is an id (a candidate's, a task's): the same string each time.
func (d *decoder) name() string {
	b := d.bytes()
	if s, ok := d.names[string(b)]; ok {
		return s
	}
	s := string(b)
	d.names[s] = s
	return s
}

func (d *decoder) stamp() fileStamp {
	return fileStamp{size: d.varint(), mtime: d.varint(), sum: uint32(d.uvarint())}
}

// trial reads a trial naming fewer than names names.
func (d *decoder) trial(t *IndexedTrial, names uint32) {
	t.Off, t.Len = d.varint(), int32(d.varint())
	t.Candidate, t.Task = uint32(d.uvarint()), uint32(d.uvarint())
	t.Trial, t.attempts = int32(d.varint()), int32(d.varint())
	t.flags = uint8(d.uvarint())
	if t.flags&hasExitCode != 0 {
		t.exitCode = int32(d.varint())
	}
	t.kind = uint32(d.uvarint())
	t.runtime = d.float()
	if t.flags&hasScore != 0 {
		t.score = d.float()
	}
	if t.flags&hasReward != 0 {
		t.reward = d.float()
	}
	t.artifactBytes = d.varint()
	t.message = d.string()
	if t.flags&hasNotes != 0 {
		t.notes = d.notes()
	}
	if t.Candidate >= names || t.Task >= names || t.kind >= names || t.Off < 0 || t.Len < 0 {
		d.fail("a trial")
	}
}

func (d *decoder) notes() *trialNotes {
	n := &trialNotes{submitError: d.string()}
	has := d.uvarint()
	if has&1 != 0 {
		n.cost = &Cost{USD: d.float(), ModelUSD: d.float(), SandboxUSD: d.float(), Tokens: d.varint(), Unpriced: d.string()}
	}
	if has&2 != 0 {
		n.passMark = new(d.float())
	}
	for range d.count() {
		n.judges = append(n.judges, JudgeResult{Name: d.string(), Error: d.string()})
	}
	for range d.count() {
		c := CheckResult{Name: d.string(), Passed: int(d.varint()), Of: int(d.varint()), Note: d.string()}
		for range d.count() {
			c.Failed = append(c.Failed, CheckFailure{Check: d.string(), Want: d.string(), Got: d.string()})
		}
		n.checks = append(n.checks, c)
	}
	for range d.count() {
		n.tampered = append(n.tampered, d.string())
	}
	return n
}

// record: the record without its tasks and task matrix as JSON (a few
// kilobytes), then those.
func (e *encoder) record(rec *Record) error {
	head := *rec
	head.Tasks, head.TaskMatrix = nil, nil
	b, err := json.Marshal(&head)
	if err != nil {
		return fmt.Errorf("index: the record: %w", err)
	}
	e.string(string(b))
	e.uvarint(uint64(len(rec.Tasks)))
	for _, t := range rec.Tasks {
		e.string(t.ID)
		e.string(t.Objective)
		e.float(t.Weight)
		e.string(t.Difficulty)
		e.string(t.Category)
	}
	e.uvarint(uint64(len(rec.TaskMatrix)))
	for i := range rec.TaskMatrix {
		e.taskRow(&rec.TaskMatrix[i])
	}
	return nil
}

func (e *encoder) taskRow(row *TaskRow) {
	e.string(row.TaskID)
	e.float(row.Weight)
	e.float(row.Mean)
	e.float(row.Spread)
	e.bool(row.Unscored)
	e.uvarint(uint64(len(row.Cells)))
	for _, c := range row.Cells {
		e.string(c.CandidateID)
		e.bool(c.Score != nil)
		if c.Score != nil {
			e.float(*c.Score)
		}
		e.varint(int64(c.Trials))
		e.varint(int64(c.Successes))
		e.varint(int64(c.Passes))
		e.bool(c.Solved)
	}
}

func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

func (d *decoder) bool() bool { return d.uvarint() != 0 }

func (d *decoder) record() *Record {
	rec := &Record{}
	if err := json.Unmarshal(d.bytes(), rec); err != nil {
		d.fail("the record")
	}
	if n := d.count(); n > 0 {
		rec.Tasks = make([]TaskInfo, n)
		for i := range rec.Tasks {
			rec.Tasks[i] = TaskInfo{ID: d.name(), Objective: d.string(), Weight: d.float(), Difficulty: d.name(), Category: d.name()}
		}
	}
	if n := d.count(); n > 0 {
		rec.TaskMatrix = make([]TaskRow, n)
		for i := range rec.TaskMatrix {
			d.taskRow(&rec.TaskMatrix[i])
		}
	}
	return rec
}

func (d *decoder) taskRow(row *TaskRow) {
	row.TaskID, row.Weight, row.Mean, row.Spread, row.Unscored = d.name(), d.float(), d.float(), d.float(), d.bool()
	if n := d.count(); n > 0 {
		row.Cells = make([]TaskCell, n)
		for i := range row.Cells {
			c := &row.Cells[i]
			c.CandidateID = d.name()
			if d.bool() {
				c.Score = new(d.float())
			}
			c.Trials, c.Successes, c.Passes, c.Solved = int(d.varint()), int(d.varint()), int(d.varint()), d.bool()
		}
	}
}
