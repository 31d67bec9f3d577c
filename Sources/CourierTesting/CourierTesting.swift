// The in-process test server lands here.
