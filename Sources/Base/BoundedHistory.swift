/// The most recent `capacity` elements, oldest first, in storage reserved
/// once: a long run's history costs the same memory in its first minute as
/// in its tenth hour (a growing array would double its storage now and then,
/// and a footprint budget would see it creep).
public struct BoundedHistory<Element>: Sendable where Element: Sendable {
    public let capacity: Int
    private var storage: [Element] = []
    /// Where the next element goes once the storage is full.
    private var next = 0

    public init(capacity: Int) {
        precondition(capacity > 0, "a history holds at least one element")
        self.capacity = capacity
        storage.reserveCapacity(capacity)
    }

    public var count: Int { storage.count }
    public var isEmpty: Bool { storage.isEmpty }

    public mutating func append(_ element: Element) {
        if storage.count < capacity {
            storage.append(element)
        } else {
            storage[next] = element
            next = next + 1 == capacity ? 0 : next + 1
        }
    }

    /// The elements, oldest first.
    public var elements: [Element] { Array(storage[next...] + storage[..<next]) }

    /// The elements in no particular order (no copy to reorder them).
    public var unordered: [Element] { storage }
}
