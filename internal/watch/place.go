package watch

import "fmt"

// Landmark names the part of a page that holds a link, as assistive
// technology names the landmarks of a page: its banner (header), a
// navigation (nav), its main content (main), a complementary part (aside),
// its content information (footer), or none of them. It is not one of a
// page's regions (LinkOptions.Within and Exclude), which people choose.
type Landmark string

// The landmarks a link may stand in; LandmarkNone when no landmark holds it.
const (
	LandmarkHeader Landmark = "header"
	LandmarkNav    Landmark = "nav"
	LandmarkMain   Landmark = "main"
	LandmarkAside  Landmark = "aside"
	LandmarkFooter Landmark = "footer"
	LandmarkNone   Landmark = "none"
)

// Landmarks lists every landmark, in the order a page usually shows them.
var Landmarks = [...]Landmark{LandmarkHeader, LandmarkNav, LandmarkMain, LandmarkAside, LandmarkFooter, LandmarkNone}

// Valid reports whether l is one of Landmarks.
func (l Landmark) Valid() bool {
	for _, k := range Landmarks {
		if l == k {
			return true
		}
	}
	return false
}

// MaxHeading is the deepest heading level, that of <h6>.
const MaxHeading = 6

// Place is where a link stood on its homepage in the check that found it.
// The zero Place is not known: links sent by crawlers older than places,
// updates recorded before them, and links read from a source other than the
// homepage. A known Place has a Position and a Landmark.
type Place struct {
	// Position is the rank, from 1, of the link among the page's kept
	// links (those its options admit) in document order, each link ranked
	// by the first of its anchors; 0 when not known.
	Position int `json:"position,omitempty"`
	// Heading is the level, 1 to 6, of the heading the link's text came
	// from (its headline); 0 when its text is not a heading or when not
	// known.
	Heading int `json:"heading,omitempty"`
	// Landmark holds the first of the link's anchors; empty when not known.
	Landmark Landmark `json:"landmark,omitempty"`
}

// Known reports whether p says where the link stood.
func (p Place) Known() bool { return p.Position > 0 }

// Validate reports whether p is the zero Place or a known one with a
// heading level from 0 to MaxHeading and a valid landmark.
func (p Place) Validate() error {
	switch {
	case p == Place{}:
		return nil
	case p.Position <= 0:
		return fmt.Errorf("place: position %d, want 1 or more", p.Position)
	case p.Heading < 0 || p.Heading > MaxHeading:
		return fmt.Errorf("place: heading %d, want 0 to %d", p.Heading, MaxHeading)
	case !p.Landmark.Valid():
		return fmt.Errorf("place: landmark %q, want one of %v", p.Landmark, Landmarks)
	}
	return nil
}

// Checked returns p when it is valid and the zero Place otherwise, so that
// a message from a faulty crawler records a link without its place rather
// than not at all.
func (p Place) Checked() Place {
	if p.Validate() != nil {
		return Place{}
	}
	return p
}

// Label says p as people read it, "#3 · main · h2", leaving out a heading
// of 0 and the landmark none; empty when p is not known. It is not
// String, which the types that embed a Place would take for their own.
func (p Place) Label() string {
	if !p.Known() {
		return ""
	}
	s := fmt.Sprintf("#%d", p.Position)
	if p.Landmark != LandmarkNone && p.Landmark != "" {
		s += " · " + string(p.Landmark)
	}
	if p.Heading > 0 {
		s += fmt.Sprintf(" · h%d", p.Heading)
	}
	return s
}
