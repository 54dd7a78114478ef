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
	b := append(make([]byte, 0, 64+len(x.Trials)*48), indexMagic...)
	c := &codec{b: binary.AppendUvarint(b, indexVersion)}
	c.index(x)
	if c.err != nil {
		return nil, c.err
	}
	return binary.LittleEndian.AppendUint32(c.b, crc32.Checksum(c.b, castagnoli)), nil
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
	c := &codec{reading: true, b: b[:n], at: len(indexMagic), names: map[string]string{}}
	if v := readVarint(c, binary.Uvarint); v != indexVersion {
		return nil, fmt.Errorf("layout %d, not %d", v, indexVersion)
	}
	x := NewIndex()
	c.index(x)
	x.Names.at = make(map[string]uint32, len(x.Names.list))
	for i, s := range x.Names.list {
		x.Names.at[s] = uint32(i)
	}
	if c.err == nil && c.at != len(c.b) {
		c.err = errors.New("bytes after its trials")
	}
	if c.err != nil {
		return nil, c.err
	}
	return x, nil
}

// codec writes an index's file (appending to b) or, reading, reads it
// (from b[at:]): one walk of the fields (index) does both, so the two
// cannot differ. Its generic coders are functions (uvarint, varint, str,
// list). Reading, its first error sticks.
type codec struct {
	reading bool
	b       []byte
	at      int
	err     error
	// names holds the ids read (name), each kept once however often the
	// file repeats it.
	names map[string]string
}

func (c *codec) fail(what string) {
	if c.err == nil {
		c.err = fmt.Errorf("cut short or garbled at byte %d (%s)", c.at, what)
	}
}

// uvarint and varint code a number as a varint.
func uvarint[T uint8 | uint32 | uint64](c *codec, v *T) {
	if c.reading {
		*v = T(readVarint(c, binary.Uvarint))
	} else {
		c.b = binary.AppendUvarint(c.b, uint64(*v))
	}
}

func varint[T int | int32 | int64](c *codec, v *T) {
	if c.reading {
		*v = T(readVarint(c, binary.Varint))
	} else {
		c.b = binary.AppendVarint(c.b, int64(*v))
	}
}

// readVarint reads a number with read (binary.Uvarint or Varint).
func readVarint[T uint64 | int64](c *codec, read func([]byte) (T, int)) T {
	v, n := read(c.b[min(c.at, len(c.b)):])
	if n <= 0 {
		c.fail("a number")
		return 0
	}
	c.at += n
	return v
}

// float codes a number as its 8 bytes.
func (c *codec) float(v *float64) {
	if !c.reading {
		c.b = binary.LittleEndian.AppendUint64(c.b, math.Float64bits(*v))
		return
	}
	if c.err != nil || len(c.b)-c.at < 8 {
		c.fail("a number")
		return
	}
	*v = math.Float64frombits(binary.LittleEndian.Uint64(c.b[c.at:]))
	c.at += 8
}

// bool codes a bool as a byte, 0 or 1.
func (c *codec) bool(v *bool) {
	var n uint64
	if *v {
		n = 1
	}
	uvarint(c, &n)
	*v = n != 0
}

// str codes a string or bytes, their length first; a string read is a
// text of its own: the file's bytes are not held for it.
func str[T string | []byte](c *codec, v *T) {
	if !c.reading {
		c.b = append(binary.AppendUvarint(c.b, uint64(len(*v))), *v...)
		return
	}
	n := c.count(0)
	if c.err != nil {
		return
	}
	*v = T(c.b[c.at : c.at+n])
	c.at += n
}

// name codes an id (a candidate's, a task's); read, the same string each
// time.
func (c *codec) name(s *string) {
	if !c.reading {
		str(c, s)
		return
	}
	var b []byte
	str(c, &b)
	if known, ok := c.names[string(b)]; ok {
		*s = known
		return
	}
	*s = string(b)
	c.names[*s] = *s
}

// count codes a list's length n; read, no more than the bytes left (each
// element takes one at least).
func (c *codec) count(n int) int {
	v := uint64(n)
	uvarint(c, &v)
	if c.reading && v > uint64(len(c.b)-c.at) {
		c.fail("a count")
		return 0
	}
	return int(v)
}

// list codes the list s, its length then each element (each); read, an
// empty one is nil.
func list[T any](c *codec, s *[]T, each func(*T)) {
	if n := c.count(len(*s)); c.reading && n > 0 {
		*s = make([]T, n)
	}
	for i := range *s {
		each(&(*s)[i])
	}
}

// some is *p, made first when it is nil (read).
func some[T any](p **T) *T {
	if *p == nil {
		*p = new(T)
	}
	return *p
}

// index codes x after its version: the files it stands for, the record,
// the names, the trials.
func (c *codec) index(x *Index) {
	str(c, &x.of.trialsName)
	c.stamp(&x.of.trials)
	c.stamp(&x.of.results)
	c.record(some(&x.Record))
	list(c, &x.Names.list, c.name)
	names := uint32(len(x.Names.list))
	list(c, &x.Trials, func(t *IndexedTrial) { c.trial(t, names) })
}

func (c *codec) stamp(s *fileStamp) {
	varint(c, &s.size)
	varint(c, &s.mtime)
	uvarint(c, &s.sum)
}

// trial codes a trial; read, one naming fewer than names names.
func (c *codec) trial(t *IndexedTrial, names uint32) {
	varint(c, &t.Off)
	varint(c, &t.Len)
	uvarint(c, &t.Candidate)
	uvarint(c, &t.Task)
	varint(c, &t.Trial)
	varint(c, &t.attempts)
	uvarint(c, &t.flags)
	if t.flags&hasExitCode != 0 {
		varint(c, &t.exitCode)
	}
	uvarint(c, &t.kind)
	c.float(&t.runtime)
	if t.flags&hasScore != 0 {
		c.float(&t.score)
	}
	if t.flags&hasReward != 0 {
		c.float(&t.reward)
	}
	varint(c, &t.artifactBytes)
	str(c, &t.message)
	if t.flags&hasNotes != 0 {
		c.notes(some(&t.notes))
	}
	if c.reading && (t.Candidate >= names || t.Task >= names || t.kind >= names || t.Off < 0 || t.Len < 0) {
		c.fail("a trial")
	}
}

// notes: the submit error, cost and pass mark (each after a bit saying it
// is there), the judges, the checks, the tampered tools.
func (c *codec) notes(n *trialNotes) {
	str(c, &n.submitError)
	var has uint64
	if n.cost != nil {
		has |= 1
	}
	if n.passMark != nil {
		has |= 2
	}
	uvarint(c, &has)
	if has&1 != 0 {
		cost := some(&n.cost)
		c.float(&cost.USD)
		c.float(&cost.ModelUSD)
		c.float(&cost.SandboxUSD)
		varint(c, &cost.Tokens)
		str(c, &cost.Unpriced)
	}
	if has&2 != 0 {
		c.float(some(&n.passMark))
	}
	list(c, &n.judges, func(j *JudgeResult) {
		str(c, &j.Name)
		str(c, &j.Error)
	})
	list(c, &n.checks, func(k *CheckResult) {
		str(c, &k.Name)
		varint(c, &k.Passed)
		varint(c, &k.Of)
		str(c, &k.Note)
		list(c, &k.Failed, func(f *CheckFailure) {
			str(c, &f.Check)
			str(c, &f.Want)
			str(c, &f.Got)
		})
	})
	list(c, &n.tampered, func(s *string) { str(c, s) })
}

// record codes rec without its tasks and task matrix as JSON (a few
// kilobytes), then those.
func (c *codec) record(rec *Record) {
	if c.reading {
		var b []byte
		if str(c, &b); json.Unmarshal(b, rec) != nil {
			c.fail("the record")
		}
	} else {
		head := *rec
		head.Tasks, head.TaskMatrix = nil, nil
		b, err := json.Marshal(&head)
		if err != nil {
			c.err = fmt.Errorf("index: the record: %w", err)
		}
		str(c, &b)
	}
	list(c, &rec.Tasks, func(t *TaskInfo) {
		c.name(&t.ID)
		str(c, &t.Objective)
		c.float(&t.Weight)
		c.name(&t.Difficulty)
		c.name(&t.Category)
	})
	list(c, &rec.TaskMatrix, func(row *TaskRow) {
		c.name(&row.TaskID)
		c.float(&row.Weight)
		c.float(&row.Mean)
		c.float(&row.Spread)
		c.bool(&row.Unscored)
		list(c, &row.Cells, func(cell *TaskCell) {
			c.name(&cell.CandidateID)
			scored := cell.Score != nil
			if c.bool(&scored); scored {
				c.float(some(&cell.Score))
			}
			varint(c, &cell.Trials)
			varint(c, &cell.Successes)
			varint(c, &cell.Passes)
			c.bool(&cell.Solved)
		})
	})
}
