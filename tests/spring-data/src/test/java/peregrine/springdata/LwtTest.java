package peregrine.springdata;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.springframework.data.cassandra.core.query.Criteria.where;

import com.datastax.oss.driver.api.core.cql.Row;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.dao.OptimisticLockingFailureException;
import org.springframework.data.cassandra.core.DeleteOptions;
import org.springframework.data.cassandra.core.EntityWriteResult;
import org.springframework.data.cassandra.core.InsertOptions;
import org.springframework.data.cassandra.core.UpdateOptions;
import org.springframework.data.cassandra.core.WriteResult;

/**
 * Lightweight transactions through Spring Data: INSERT IF NOT EXISTS, UPDATE IF condition / IF
 * EXISTS, DELETE IF EXISTS, and {@code @Version} optimistic locking.
 */
class LwtTest extends SpringDataTest {

    private static String id() {
        return "lwt-" + UUID.randomUUID();
    }

    @Test
    void insertIfNotExistsAppliesOnce() {
        String id = id();
        InsertOptions ifNotExists = InsertOptions.builder().withIfNotExists().build();
        EntityWriteResult<Account> first = template.insert(new Account(id, "ann", 100), ifNotExists);
        assertThat(first.wasApplied()).isTrue();

        EntityWriteResult<Account> second = template.insert(new Account(id, "bob", 5), ifNotExists);
        assertThat(second.wasApplied()).isFalse();
        // The failed condition returns the row as it is.
        Row existing = second.getRows().get(0);
        assertThat(existing.getBoolean("[applied]")).isFalse();
        assertThat(existing.getString("owner")).isEqualTo("ann");
        assertThat(existing.getLong("balance")).isEqualTo(100);
        assertThat(template.selectOneById(id, Account.class).owner).isEqualTo("ann");
    }

    @Test
    void updateWithIfCondition() {
        String id = id();
        template.insert(new Account(id, "ann", 100));
        UpdateOptions if100 = UpdateOptions.builder().ifCondition(where("balance").is(100L)).build();

        EntityWriteResult<Account> applied = template.update(new Account(id, "ann", 150), if100);
        assertThat(applied.wasApplied()).isTrue();
        assertThat(template.selectOneById(id, Account.class).balance).isEqualTo(150);

        EntityWriteResult<Account> stale = template.update(new Account(id, "ann", 175), if100);
        assertThat(stale.wasApplied()).isFalse();
        Row current = stale.getRows().get(0);
        assertThat(current.getBoolean("[applied]")).isFalse();
        assertThat(current.getLong("balance")).isEqualTo(150);
        assertThat(template.selectOneById(id, Account.class).balance).isEqualTo(150);
    }

    @Test
    void updateAndDeleteIfExists() {
        String id = id();
        UpdateOptions ifExists = UpdateOptions.builder().withIfExists().build();
        assertThat(template.update(new Account(id, "nobody", 1), ifExists).wasApplied()).isFalse();
        assertThat(template.selectOneById(id, Account.class)).isNull();

        template.insert(new Account(id, "ann", 1));
        assertThat(template.update(new Account(id, "ann", 2), ifExists).wasApplied()).isTrue();

        DeleteOptions deleteIfExists = DeleteOptions.builder().withIfExists().build();
        WriteResult deleted = template.delete(new Account(id, "ann", 2), deleteIfExists);
        assertThat(deleted.wasApplied()).isTrue();
        assertThat(template.delete(new Account(id, "ann", 2), deleteIfExists).wasApplied()).isFalse();
        assertThat(template.selectOneById(id, Account.class)).isNull();
    }

    /** {@code @Version}: a save from a stale copy is refused with an OptimisticLockingFailureException. */
    @Test
    void versionedEntityOptimisticLocking() {
        UUID id = UUID.randomUUID();
        Document created = template.insert(new Document(id, "draft"));
        assertThat(created.version).isEqualTo(0L);

        Document mine = template.selectOneById(id, Document.class);
        Document theirs = template.selectOneById(id, Document.class);
        mine.title = "mine";
        Document saved = template.update(mine);
        assertThat(saved.version).isEqualTo(1L);

        theirs.title = "theirs";
        assertThatThrownBy(() -> template.update(theirs)).isInstanceOf(OptimisticLockingFailureException.class);
        Document stored = template.selectOneById(id, Document.class);
        assertThat(stored.title).isEqualTo("mine");
        assertThat(stored.version).isEqualTo(1L);

        // A second insert of the same id is refused too (the first save is INSERT IF NOT EXISTS).
        assertThatThrownBy(() -> template.insert(new Document(id, "again")))
                .isInstanceOf(OptimisticLockingFailureException.class);
    }
}
