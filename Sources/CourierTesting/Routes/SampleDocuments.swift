/// The documents `/json`, `/xml`, `/html` and `/encoding/utf8` serve: close equivalents of
/// httpbin's samples (a slide show, a short story page, a page of UTF-8 text), written for Courier.
enum SampleDocuments {
    /// `/json`: a slide show, shaped like httpbin's.
    static let json = """
        {
          "slideshow": {
            "author": "Courier Tests",
            "date": "date of publication",
            "slides": [
              {
                "title": "Wake up to Courier!",
                "type": "all"
              },
              {
                "items": [
                  "Why <em>Courier</em> is great",
                  "Who <em>uses</em> Courier"
                ],
                "title": "Overview",
                "type": "all"
              }
            ],
            "title": "Sample Slide Show"
          }
        }

        """

    /// `/xml`: the same slide show as XML.
    static let xml = """
        <?xml version='1.0' encoding='us-ascii'?>

        <!--  A sample slide show for tests  -->

        <slideshow
            title="Sample Slide Show"
            date="date of publication"
            author="Courier Tests"
            >

            <!-- TITLE SLIDE -->
            <slide type="all">
              <title>Wake up to Courier!</title>
            </slide>

            <!-- OVERVIEW -->
            <slide type="all">
                <title>Overview</title>
                <item>Why <em>Courier</em> is great</item>
                <item/>
                <item>Who <em>uses</em> Courier</item>
            </slide>

        </slideshow>

        """

    /// `/html`: a short page.
    static let html = """
        <!DOCTYPE html>
        <html>
          <head>
            <meta charset="utf-8">
            <title>Courier test page</title>
          </head>
          <body>
            <h1>The Courier's Errand</h1>
            <div>
              <p>
                The courier left before dawn with a sealed letter and a map that was wrong in three places.
                By noon the road had turned to mud, the horse had lost a shoe, and the letter, still sealed,
                was the only dry thing left. She delivered it at dusk, took the receipt, and rode home.
              </p>
            </div>
          </body>
        </html>

        """

    /// `/encoding/utf8`: text in many scripts.
    static let utf8 = """
        <!DOCTYPE html>
        <html>
          <head><meta charset="utf-8"><title>UTF-8 sample</title></head>
          <body>
            <h1>UTF-8 encoded sample plain-text file</h1>
            <pre>
        Latin:      Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich.
        Greek:      Ξεσκεπάζω την ψυχοφθόρα βδελυγμία.
        Cyrillic:   Съешь же ещё этих мягких французских булок, да выпей чаю.
        Hebrew:     דג סקרן שט בים מאוכזב ולפתע מצא חברה
        Arabic:     نص حكيم له سر قاطع وذو شأن عظيم
        Japanese:   いろはにほへと ちりぬるを
        Chinese:    天地玄黄，宇宙洪荒。
        Korean:     다람쥐 헌 쳇바퀴에 타고파
        Math:       ∀x ∈ ℝ: ⌈x⌉ = −⌊−x⌋, ∑ ∫ ∂ √ ∞ ≠ ≤ ≥
        Symbols:    → ← ↑ ↓ ✓ ✗ ★ ♠ ♣ ♥ ♦ € £ ¥
        Emoji:      📦 🚚 ✉️ 🐎
            </pre>
          </body>
        </html>

        """
}
