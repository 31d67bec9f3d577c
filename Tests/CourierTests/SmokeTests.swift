import Courier
import Testing

@Test func errorsCompareByCode() {
    #expect(CourierError(.timedOut, "a") == CourierError.timedOut)
}
