package v1beta1

// DefaultBillingCycle is what the Packet API uses when a device names no billing cycle. The
// defaulting webhook writes it down so the object says what the device runs with; the device
// service sends it for objects created before the webhook ran.
const DefaultBillingCycle = "hourly"

// BillingCycles are the billing cycles the Packet API accepts (spec.billingCycle's enum).
var BillingCycles = []string{DefaultBillingCycle, "daily", "monthly", "yearly"}
