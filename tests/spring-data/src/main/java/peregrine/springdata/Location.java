package peregrine.springdata;

import org.springframework.data.cassandra.core.mapping.UserDefinedType;

/** A user-defined type {@code location}, created by the schema action before the tables using it. */
@UserDefinedType("location")
public record Location(double lat, double lon, String label) {
}
