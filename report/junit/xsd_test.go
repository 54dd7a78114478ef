package junit_test

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// This file is a small validator for the part of XML Schema that
// testdata/junit.xsd uses: global element declarations, each either a
// simple type or a complex type with attributes (typed, optional or
// required), mixed content or none, and a content model that is a sequence
// of element references and choices with minOccurs/maxOccurs. It reads the
// XSD itself, so the schema file, not this code, says what valid JUnit is;
// it fails on any XSD construct it does not know rather than ignore it.

type xsdSchema struct {
	elements    map[string]*xsdElement
	simpleTypes map[string]string // name -> base
}

type xsdElement struct {
	name       string
	simpleType string // set for <xs:element name="x" type="xs:string"/>
	mixed      bool
	attrs      map[string]xsdAttr
	content    []xsdParticle // a sequence
}

type xsdAttr struct {
	typ      string
	required bool
}

// xsdParticle is an element reference or a choice of references.
type xsdParticle struct {
	ref      string   // element name, or "" for a choice
	choice   []string // element names
	min, max int      // max -1 means unbounded
}

// Raw XSD shapes for encoding/xml.
type rawSchema struct {
	Elements    []rawElement    `xml:"element"`
	SimpleTypes []rawSimpleType `xml:"simpleType"`
	Other       []rawAny        `xml:",any"`
}

type rawAny struct{ XMLName xml.Name }

type rawSimpleType struct {
	Name        string `xml:"name,attr"`
	Restriction struct {
		Base string `xml:"base,attr"`
	} `xml:"restriction"`
}

type rawElement struct {
	Name        string          `xml:"name,attr"`
	Ref         string          `xml:"ref,attr"`
	Type        string          `xml:"type,attr"`
	MinOccurs   string          `xml:"minOccurs,attr"`
	MaxOccurs   string          `xml:"maxOccurs,attr"`
	ComplexType *rawComplexType `xml:"complexType"`
}

type rawComplexType struct {
	Mixed      bool      `xml:"mixed,attr"`
	Sequence   *rawGroup `xml:"sequence"`
	Attributes []rawAttr `xml:"attribute"`
	Other      []rawAny  `xml:",any"` // anything else is refused
}

type rawGroup struct {
	Items []rawGroupItem `xml:",any"`
}

type rawGroupItem struct {
	XMLName   xml.Name
	Ref       string         `xml:"ref,attr"`
	MinOccurs string         `xml:"minOccurs,attr"`
	MaxOccurs string         `xml:"maxOccurs,attr"`
	Items     []rawGroupItem `xml:",any"`
}

type rawAttr struct {
	Name string `xml:"name,attr"`
	Type string `xml:"type,attr"`
	Use  string `xml:"use,attr"`
}

func occurs(s string, def int) (int, error) {
	switch s {
	case "":
		return def, nil
	case "unbounded":
		return -1, nil
	}
	return strconv.Atoi(s)
}

func loadXSD(path string) (*xsdSchema, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw rawSchema
	if err := xml.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	for _, o := range raw.Other {
		if o.XMLName.Local != "element" && o.XMLName.Local != "simpleType" {
			return nil, fmt.Errorf("%s: unsupported top-level <%s>", path, o.XMLName.Local)
		}
	}
	s := &xsdSchema{elements: map[string]*xsdElement{}, simpleTypes: map[string]string{}}
	for _, st := range raw.SimpleTypes {
		s.simpleTypes[st.Name] = st.Restriction.Base
	}
	for _, re := range raw.Elements {
		el := &xsdElement{name: re.Name, simpleType: re.Type, attrs: map[string]xsdAttr{}}
		if ct := re.ComplexType; ct != nil {
			for _, o := range ct.Other {
				return nil, fmt.Errorf("%s: element %s: unsupported <%s>", path, re.Name, o.XMLName.Local)
			}
			el.mixed = ct.Mixed
			for _, a := range ct.Attributes {
				el.attrs[a.Name] = xsdAttr{typ: a.Type, required: a.Use == "required"}
			}
			if ct.Sequence != nil {
				for _, it := range ct.Sequence.Items {
					min, err := occurs(it.MinOccurs, 1)
					if err != nil {
						return nil, err
					}
					max, err := occurs(it.MaxOccurs, 1)
					if err != nil {
						return nil, err
					}
					p := xsdParticle{min: min, max: max}
					switch it.XMLName.Local {
					case "element":
						if it.Ref == "" {
							return nil, fmt.Errorf("%s: element %s: local element declarations are not supported", path, re.Name)
						}
						p.ref = it.Ref
					case "choice":
						for _, c := range it.Items {
							if c.XMLName.Local != "element" || c.Ref == "" {
								return nil, fmt.Errorf("%s: element %s: choice of <%s> not supported", path, re.Name, c.XMLName.Local)
							}
							p.choice = append(p.choice, c.Ref)
						}
					default:
						return nil, fmt.Errorf("%s: element %s: unsupported particle <%s>", path, re.Name, it.XMLName.Local)
					}
					el.content = append(el.content, p)
				}
			}
		}
		s.elements[el.name] = el
	}
	return s, nil
}

// node is a parsed XML element.
type node struct {
	name     string
	attrs    map[string]string
	children []*node
	text     strings.Builder
}

func parseXML(r io.Reader) (*node, error) {
	dec := xml.NewDecoder(r)
	var stack []*node
	var root *node
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &node{name: t.Name.Local, attrs: map[string]string{}}
			for _, a := range t.Attr {
				n.attrs[a.Name.Local] = a.Value
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.children = append(p.children, n)
			} else if root != nil {
				return nil, fmt.Errorf("more than one root element")
			} else {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text.Write(t)
			}
		}
	}
	if root == nil {
		return nil, fmt.Errorf("no root element")
	}
	return root, nil
}

var xsDateTime = regexp.MustCompile(`^-?\d{4,}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?$`)

// checkType validates a value against a built-in or named simple type.
func (s *xsdSchema) checkType(typ, v string) error {
	if base, ok := s.simpleTypes[typ]; ok {
		if err := s.checkType(base, v); err != nil {
			return err
		}
		if typ == "seconds" {
			if f, _ := strconv.ParseFloat(v, 64); f < 0 {
				return fmt.Errorf("%q is negative", v)
			}
		}
		return nil
	}
	switch typ {
	case "", "xs:string":
		return nil
	case "xs:nonNegativeInteger":
		if n, err := strconv.ParseUint(v, 10, 64); err != nil || n > math.MaxInt64 {
			return fmt.Errorf("%q is not a non-negative integer", v)
		}
	case "xs:decimal":
		if !regexp.MustCompile(`^[+-]?(\d+(\.\d*)?|\.\d+)$`).MatchString(v) {
			return fmt.Errorf("%q is not a decimal", v)
		}
	case "xs:dateTime":
		if !xsDateTime.MatchString(v) {
			return fmt.Errorf("%q is not an xs:dateTime", v)
		}
		if _, err := time.Parse(time.RFC3339, v); err != nil && strings.HasSuffix(v, "Z") {
			return fmt.Errorf("%q: %v", v, err)
		}
	default:
		return fmt.Errorf("unknown type %s", typ)
	}
	return nil
}

// validate checks n, and everything under it, against its declaration.
func (s *xsdSchema) validate(n *node, path string) []error {
	path += "/" + n.name
	el, ok := s.elements[n.name]
	if !ok {
		return []error{fmt.Errorf("%s: element not declared in the schema", path)}
	}
	var errs []error
	if el.simpleType != "" {
		if len(n.children) > 0 || len(n.attrs) > 0 {
			errs = append(errs, fmt.Errorf("%s: simple-typed element has children or attributes", path))
		}
		if err := s.checkType(el.simpleType, n.text.String()); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", path, err))
		}
		return errs
	}
	for name, v := range n.attrs {
		a, ok := el.attrs[name]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: attribute %q not allowed", path, name))
			continue
		}
		if err := s.checkType(a.typ, v); err != nil {
			errs = append(errs, fmt.Errorf("%s/@%s: %v", path, name, err))
		}
	}
	for name, a := range el.attrs {
		if _, ok := n.attrs[name]; a.required && !ok {
			errs = append(errs, fmt.Errorf("%s: required attribute %q missing", path, name))
		}
	}
	if !el.mixed && strings.TrimSpace(n.text.String()) != "" {
		errs = append(errs, fmt.Errorf("%s: text not allowed", path))
	}
	// Match the children against the sequence, greedily: the schema obeys
	// XSD's unique particle attribution rule, so greedy matching is exact.
	i := 0
	for _, p := range el.content {
		count := 0
		for i < len(n.children) && (p.max < 0 || count < p.max) && p.matches(n.children[i].name) {
			i++
			count++
		}
		if count < p.min {
			errs = append(errs, fmt.Errorf("%s: expected %s at least %d time(s), found %d", path, p, p.min, count))
		}
	}
	if i < len(n.children) {
		errs = append(errs, fmt.Errorf("%s: unexpected <%s> (child %d)", path, n.children[i].name, i+1))
	}
	for _, c := range n.children {
		errs = append(errs, s.validate(c, path)...)
	}
	return errs
}

func (p xsdParticle) matches(name string) bool {
	if p.ref != "" {
		return p.ref == name
	}
	for _, c := range p.choice {
		if c == name {
			return true
		}
	}
	return false
}

func (p xsdParticle) String() string {
	if p.ref != "" {
		return "<" + p.ref + ">"
	}
	return "one of <" + strings.Join(p.choice, ">, <") + ">"
}

// validateJUnit checks a document against testdata/junit.xsd.
func validateJUnit(t *testing.T, doc []byte) []error {
	t.Helper()
	schema, err := loadXSD("testdata/junit.xsd")
	if err != nil {
		t.Fatal(err)
	}
	root, err := parseXML(strings.NewReader(string(doc)))
	if err != nil {
		return []error{fmt.Errorf("not well-formed XML: %w", err)}
	}
	if root.name != "testsuites" && root.name != "testsuite" {
		return []error{fmt.Errorf("root is <%s>", root.name)}
	}
	return schema.validate(root, "")
}
