package peregrine.springdata;

import org.springframework.data.cassandra.core.mapping.Element;
import org.springframework.data.cassandra.core.mapping.Tuple;

/** A mapped tuple: column type {@code frozen<tuple<int, text>>}. */
@Tuple
public record Pair(@Element(0) int number, @Element(1) String name) {
}
